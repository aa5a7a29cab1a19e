//! `format` values as regular languages, written as anchored ECMA-262 patterns
//! and translated by the same pattern front end as `pattern`.
//!
//! Each pattern accepts only strings the format's specification accepts (some
//! valid spellings are left out: leap seconds, lowercase `t`/`z`, IPv6 with an
//! embedded IPv4 part, host names longer than four labels), so no invalid
//! string gets through and every kind of value stays writable.

use std::sync::LazyLock;

/// Formats the JSON Schema specification defines but that are not regular or
/// not written here; they are an error in strict mode.
pub const UNSUPPORTED: &[&str] =
    &["idn-email", "idn-hostname", "iri", "iri-reference", "uri-template", "regex"];

const YEAR: &str = r"(?:[0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})";
const LEAP_YEAR: &str = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)";

fn date() -> String {
    format!(
        "(?:{YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|{LEAP_YEAR}-02-29)"
    )
}

fn time() -> String {
    r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])".to_string()
}

const HEX: &str = "[0-9a-fA-F]";

fn ipv4() -> String {
    let octet = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])";
    format!(r"{octet}(?:\.{octet}){{3}}")
}

fn ipv6() -> String {
    let h = format!("{HEX}{{1,4}}");
    let forms = [
        format!("(?:{h}:){{7}}{h}"),
        format!("(?:{h}:){{1,7}}:"),
        format!("(?:{h}:){{1,6}}:{h}"),
        format!("(?:{h}:){{1,5}}(?::{h}){{1,2}}"),
        format!("(?:{h}:){{1,4}}(?::{h}){{1,3}}"),
        format!("(?:{h}:){{1,3}}(?::{h}){{1,4}}"),
        format!("(?:{h}:){{1,2}}(?::{h}){{1,5}}"),
        format!("{h}:(?::{h}){{1,6}}"),
        format!(":(?:(?::{h}){{1,7}}|:)"),
    ];
    format!("(?:{})", forms.join("|"))
}

fn hostname() -> String {
    // Labels of 1-63 characters; at most four labels keeps the total under 253.
    // No "--" in the third and fourth places (reserved for A-labels, which
    // need Punycode checks that are not regular).
    let label = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,2}[A-Za-z0-9]|[A-Za-z0-9-](?:[A-Za-z0-9][A-Za-z0-9-]|-[A-Za-z0-9])[A-Za-z0-9-]{0,58}[A-Za-z0-9])?";
    format!(r"(?:{label}\.){{0,3}}{label}")
}

fn uri_parts() -> (String, String, String) {
    let pct = format!("%{HEX}{HEX}");
    let unreserved = r"A-Za-z0-9._~\-";
    let sub = "!$&'()*+,;=";
    let pchar = format!("(?:[{unreserved}{sub}:@]|{pct})");
    let userinfo = format!("(?:[{unreserved}{sub}:]|{pct})*");
    let host = format!("(?:\\[{}\\]|(?:[{unreserved}{sub}]|{pct})*)", ipv6());
    let authority = format!("(?:{userinfo}@)?{host}(?::[0-9]*)?");
    let segment = format!("{pchar}*");
    let segment_nz = format!("{pchar}+");
    let path_abempty = format!("(?:/{segment})*");
    let path_absolute = format!("/(?:{segment_nz}(?:/{segment})*)?");
    let path_rootless = format!("{segment_nz}(?:/{segment})*");
    let hier = format!("(?://{authority}{path_abempty}|{path_absolute}|{path_rootless}|)");
    let query = format!("(?:\\?(?:{pchar}|[/?])*)?(?:#(?:{pchar}|[/?])*)?");
    let nc = format!("(?:[{unreserved}{sub}@]|{pct})");
    let relative = format!("(?://{authority}{path_abempty}|{path_absolute}|{nc}+(?:/{segment})*|)");
    (hier, query, relative)
}

fn email() -> String {
    let atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
    format!(r"{atext}+(?:\.{atext}+)*@{}", hostname())
}

/// The anchored pattern for a format, `None` when the format is not one
/// written here (see [`UNSUPPORTED`]; other names are annotations only).
/// Written once per format.
pub fn pattern(format: &str) -> Option<&'static str> {
    static WRITTEN: LazyLock<Vec<(&str, String)>> = LazyLock::new(|| FORMATS.iter().filter_map(|&f| Some((f, write(f)?))).collect());
    WRITTEN.iter().find(|w| w.0 == format).map(|w| w.1.as_str())
}

/// The formats [`pattern`] writes.
const FORMATS: &[&str] = &[
    "date", "time", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "uuid", "uri", "uri-reference", "json-pointer",
    "relative-json-pointer",
];

fn write(format: &str) -> Option<String> {
    let body = match format {
        "date" => date(),
        "time" => time(),
        "date-time" => format!("{}[Tt]{}", date(), time()),
        "duration" => {
            let t = "T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)";
            let d = "(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)";
            format!("P(?:{d}(?:{t})?|{t}|[0-9]+W)")
        }
        "email" => email(),
        "hostname" => hostname(),
        "ipv4" => ipv4(),
        "ipv6" => ipv6(),
        "uuid" => format!("{HEX}{{8}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{12}}"),
        "uri" => {
            let (hier, query, _) = uri_parts();
            format!("[A-Za-z][A-Za-z0-9+.-]*:{hier}{query}")
        }
        "uri-reference" => {
            let (hier, query, relative) = uri_parts();
            format!("(?:[A-Za-z][A-Za-z0-9+.-]*:{hier}|{relative}){query}")
        }
        "json-pointer" => "(?:/(?:[^~/]|~[01])*)*".to_string(),
        "relative-json-pointer" => "(?:0|[1-9][0-9]*)(?:#|(?:/(?:[^~/]|~[01])*)*)".to_string(),
        _ => return None,
    };
    Some(format!("^(?:{body})$"))
}

#[cfg(test)]
mod tests {
    use super::super::regex::parse_pattern;
    use super::*;

    fn check(format: &str, good: &[&str], bad: &[&str]) {
        let re = parse_pattern(pattern(format).unwrap()).unwrap();
        for s in good {
            assert!(re.matches(s), "{format} should accept {s}");
        }
        for s in bad {
            assert!(!re.matches(s), "{format} should reject {s}");
        }
    }

    /// Every listed format is written, and no other name is one.
    #[test]
    fn listed_formats_are_written() {
        assert!(FORMATS.iter().all(|f| pattern(f).is_some_and(|p| p.starts_with('^'))));
        assert_eq!(pattern("color"), None);
    }

    #[test]
    fn dates_know_the_calendar() {
        check("date", &["2024-02-29", "2023-12-31", "2000-02-29"], &["2023-02-29", "1900-02-29", "2023-04-31", "0000-01-01", "2023-1-01"]);
        check("date-time", &["1963-06-19T08:30:06.283185Z", "2024-01-01T00:00:00+05:30"], &["2024-01-01 00:00:00Z", "2024-01-01T24:00:00Z"]);
        check("duration", &["P4DT12H30M5S", "PT1S", "P2W", "P1Y2M"], &["P", "PT", "P1D2H", "P2W1D"]);
    }

    #[test]
    fn network_formats() {
        check("ipv4", &["192.168.0.1", "0.0.0.0"], &["256.1.1.1", "01.1.1.1", "1.1.1"]);
        check("ipv6", &["::1", "2001:db8::ff00:42:8329", "::"], &["12345::", "1:2:3:4:5:6:7:8:9", ":1"]);
        check("hostname", &["www.example.com", "a-b.c"], &["-a.com", "a..b"]);
        check("email", &["joe.bloggs@example.com"], &["@example.com", "a@@b"]);
        check("uuid", &["2EB8AA08-AA98-11EA-B4AA-73B441D16380"], &["2eb8aa08-aa98-11ea-b4aa-73b441d1638"]);
        check("uri", &["http://example.com/a?b=c#d", "urn:isbn:0451450523"], &["//example.com", "http://a b", "http://a@b@c"]);
        check("uri-reference", &["/a/b", "#frag", "../x"], &["\\\\WINDOWS\\share"]);
    }
}
