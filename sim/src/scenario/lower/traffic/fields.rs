//! The text in trace and length files: CSV fields, token counts, and times as decimal seconds or
//! as dates and times, in picoseconds (exact for plain decimals; dates in UTC).

/// One CSV line's fields, trimmed; double-quoted fields may hold commas and `""`.
pub(super) fn split_csv(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field).trim().to_string()),
            c => field.push(c),
        }
    }
    fields.push(field.trim().to_string());
    fields
}

/// A whole number of tokens: `42`, or `42.0` as some tools write it.
pub(super) fn parse_count(text: &str) -> Option<u32> {
    if let Ok(v) = text.parse::<u32>() {
        return Some(v);
    }
    let f = text.parse::<f64>().ok()?;
    (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= u32::MAX as f64).then_some(f as u32)
}

pub(super) const PS_PER_S: i128 = 1_000_000_000_000;

/// Decimal seconds (`12.5`, `-3`, `1e3`) as picoseconds; exact for plain decimals.
pub(super) fn parse_seconds_ps(text: &str) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let plain = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let ps = if plain(int) && plain(frac) && !(int.is_empty() && frac.is_empty()) {
        if int.len() > 24 {
            return None;
        }
        let whole: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        // Picoseconds: the first 12 fractional digits; further digits are below the clock.
        let mut frac_ps: i128 = 0;
        for i in 0..12 {
            let d = frac.as_bytes().get(i).map_or(0, |b| (b - b'0') as i128);
            frac_ps = frac_ps * 10 + d;
        }
        whole * PS_PER_S + frac_ps
    } else {
        let f: f64 = digits.parse().ok()?;
        if !(f.is_finite() && f < 1e20) || digits.starts_with(['+', '-']) {
            return None;
        }
        (f * 1e12).round() as i128
    };
    Some(if negative { -ps } else { ps })
}

/// `YYYY-MM-DD HH:MM:SS[.fraction][Z|±HH[:MM]]` (a `T` may stand for the space) as picoseconds
/// since 1970-01-01 UTC.
pub(super) fn parse_datetime_ps(text: &str) -> Option<i128> {
    let b = text.as_bytes();
    if b.len() < 19 || !text.is_ascii() {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = &text[r];
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    if b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b' ' || b[10] == b'T')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut frac_ps: i128 = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        for i in 0..12 {
            let d = r
                .as_bytes()
                .get(i)
                .filter(|_| i < n)
                .map_or(0, |c| (c - b'0') as i128);
            frac_ps = frac_ps * 10 + d;
        }
        rest = &r[n..];
    }
    let offset_s: i64 = match rest {
        "" | "Z" | "z" => 0,
        tz if tz.starts_with(['+', '-']) => {
            let sign = if tz.starts_with('-') { -1 } else { 1 };
            let hm = tz[1..].replace(':', "");
            if !hm.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let (h, m) = match hm.len() {
                2 => (hm.parse::<i64>().ok()?, 0),
                4 => (hm[..2].parse::<i64>().ok()?, hm[2..].parse::<i64>().ok()?),
                _ => return None,
            };
            if h > 23 || m > 59 {
                return None;
            }
            sign * (h * 3600 + m * 60)
        }
        _ => return None,
    };
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Some(secs as i128 * PS_PER_S + frac_ps)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_exactly() {
        assert_eq!(parse_seconds_ps("12.5"), Some(12_500_000_000_000));
        assert_eq!(parse_seconds_ps("0.000000000001"), Some(1));
        assert_eq!(parse_seconds_ps("-3"), Some(-3 * PS_PER_S));
        assert_eq!(parse_seconds_ps(".5"), Some(PS_PER_S / 2));
        assert_eq!(parse_seconds_ps("1e3"), Some(1000 * PS_PER_S));
        assert_eq!(parse_seconds_ps("abc"), None);
        assert_eq!(parse_seconds_ps(""), None);
        assert_eq!(parse_seconds_ps("."), None);
        assert_eq!(parse_seconds_ps("inf"), None);

        let t = parse_datetime_ps("2023-11-16 18:15:46.6805900").unwrap();
        let t0 = parse_datetime_ps("2023-11-16 18:15:46").unwrap();
        assert_eq!(t - t0, 680_590_000_000);
        // 1700158546 is 2023-11-16T18:15:46Z.
        assert_eq!(t0, 1_700_158_546 * PS_PER_S);
        assert_eq!(parse_datetime_ps("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_datetime_ps("2024-05-10 02:00:00.5+02:00"),
            parse_datetime_ps("2024-05-10 00:00:00.5")
        );
        assert_eq!(
            parse_datetime_ps("2024-03-01 00:00:00").unwrap()
                - parse_datetime_ps("2024-02-28 00:00:00").unwrap(),
            2 * 86_400 * PS_PER_S,
            "2024 is a leap year"
        );
        assert_eq!(parse_datetime_ps("2023-02-29 00:00:00"), None);
        assert_eq!(parse_datetime_ps("2023-11-16 25:00:00"), None);
        assert_eq!(parse_datetime_ps("2023-11-16 18:15:46 PST"), None);
        assert_eq!(parse_datetime_ps("2023-11-16 18:15:46."), None);
    }

    #[test]
    fn csv_fields_split_with_quotes() {
        assert_eq!(split_csv(" a, b ,c"), ["a", "b", "c"]);
        assert_eq!(
            split_csv("\"x, y\",\"say \"\"hi\"\"\",3"),
            ["x, y", "say \"hi\"", "3"]
        );
        assert_eq!(split_csv(""), [""]);
    }

    #[test]
    fn counts_accept_integral_floats_only() {
        assert_eq!(parse_count("42"), Some(42));
        assert_eq!(parse_count("42.0"), Some(42));
        assert_eq!(parse_count("42.5"), None);
        assert_eq!(parse_count("-1"), None);
        assert_eq!(parse_count("x"), None);
    }
}
