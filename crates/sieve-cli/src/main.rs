//! `sieve`: the command line for the constraint engine and the model.

fn main() {
    eprintln!("sieve: no command yet");
    std::process::exit(2);
}
