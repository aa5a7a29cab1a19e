//! The built-in "any JSON value" grammar (RFC 8259), written so that every
//! JSON text has exactly one parse.

/// GBNF for one JSON value with optional surrounding whitespace.
pub const ANY_JSON_GBNF: &str = r#"root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ws ( "," ws member ws )* )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char   ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n\r]*
"#;
