//! A software release as its number names it ("0.14.1", "v1.0"): major and minor, for tables
//! that differ by release (serving engines, training frameworks).

/// A release as "major.minor[.patch...]" ("0.9", "0.14.1", "v1.0"), or why it is not one.
pub fn parse(text: &str) -> Result<(u32, u32), String> {
    let t = text.trim().trim_start_matches(['v', 'V']);
    let mut parts = t.split('.');
    let number = |p: Option<&str>| p.and_then(|p| p.parse::<u32>().ok());
    match (number(parts.next()), number(parts.next())) {
        (Some(major), Some(minor)) => Ok((major, minor)),
        _ => Err(format!(
            "\"{text}\" is not a release number; write major.minor, e.g. \"0.11\""
        )),
    }
}
