//! The message of a caught panic, for front ends that catch the simulator's panics (a bug) and
//! show them as an error: sweeps, validation, the viewer's worker and the fuzzers.

use std::any::Any;

/// The text a panic was raised with (`panic!("...")` gives a `&str`, a formatted `panic!` a
/// `String`), or `fallback` when its payload is another type. Pass the payload itself, `&*boxed`,
/// not the `Box` that `catch_unwind` returns.
pub fn panic_message(payload: &(dyn Any + Send), fallback: &str) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| fallback.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_str_and_string_payloads_and_falls_back_otherwise() {
        let text: Box<dyn Any + Send> = Box::new("index out of bounds");
        assert_eq!(panic_message(&*text, "no message"), "index out of bounds");
        let formatted: Box<dyn Any + Send> = Box::new(format!("step {} of {}", 3, 4));
        assert_eq!(panic_message(&*formatted, "no message"), "step 3 of 4");
        let other: Box<dyn Any + Send> = Box::new(42_u32);
        assert_eq!(panic_message(&*other, "no message"), "no message");
        assert_eq!(panic_message(&*other, ""), "");
    }
}
