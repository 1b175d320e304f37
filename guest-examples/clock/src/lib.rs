//! `clock`: the variables `date` and `time` (UTC, from the WASI wall clock, which the sandbox
//! allows) and the fixed variable `timezone`. A `fixed` instant makes it deterministic.

use std::time::{SystemTime, UNIX_EPOCH};

use prompt_plugin::{config, declare, AssembleContext, Error, Plugin};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// `YYYY-MM-DDTHH:MM:SSZ`: report this instant instead of reading the clock.
    fixed: Option<String>,
}

struct Clock {
    /// Seconds since the Unix epoch, when fixed.
    fixed: Option<i64>,
}

impl Plugin for Clock {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let Config { fixed } = config::parse(config)?;
        let fixed = fixed.as_deref().map(parse_utc).transpose()?;
        declare::dynamic_variable("date")?;
        declare::dynamic_variable("time")?;
        declare::variable("timezone", Some("UTC"))?;
        Ok(Clock { fixed })
    }

    fn variable(&mut self, name: &str, _cx: &AssembleContext) -> Result<Option<String>, Error> {
        let now = match self.fixed {
            Some(secs) => secs,
            None => now()?,
        };
        let (days, secs) = (now.div_euclid(86_400), now.rem_euclid(86_400));
        match name {
            "date" => {
                let (y, m, d) = civil_from_days(days);
                Ok(Some(format!("{y:04}-{m:02}-{d:02}")))
            }
            "time" => Ok(Some(format!("{:02}:{:02}", secs / 3600, secs % 3600 / 60))),
            _ => Err(Error::invalid_input(format!(
                "no dynamic variable \"{name}\""
            ))),
        }
    }
}

fn now() -> Result<i64, Error> {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|_| Error::failed("the wall clock reads before 1970"))?;
    i64::try_from(since.as_secs()).map_err(|_| Error::failed("the wall clock is out of range"))
}

/// Parse `YYYY-MM-DDTHH:MM:SSZ` strictly: anything else is the operator's typo.
fn parse_utc(text: &str) -> Result<i64, Error> {
    let bad = || {
        Error::invalid_input(format!(
            "invalid config: fixed: \"{text}\" is not YYYY-MM-DDTHH:MM:SSZ"
        ))
    };
    let b = text.as_bytes();
    let shape_ok = b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        });
    if !shape_ok {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| text[r].parse::<i64>().map_err(|_| bad());
    let (y, mo, d, h, mi, s) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 59 {
        return Err(bad());
    }
    let days = days_from_civil(y, mo, d);
    if civil_from_days(days) != (y, mo, d) {
        return Err(bad()); // e.g. February 30th
    }
    Ok(days * 86_400 + h * 3600 + mi * 60 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

prompt_plugin::export_plugin!(Clock);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats_round_trip() {
        assert_eq!(parse_utc("1970-01-01T00:00:00Z").ok(), Some(0));
        assert_eq!(parse_utc("2026-01-01T00:00:00Z").ok(), Some(1_767_225_600));
        assert_eq!(civil_from_days(1_767_225_600 / 86_400), (2026, 1, 1));
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
        assert!(parse_utc("2026-02-30T00:00:00Z").is_err());
        assert!(parse_utc("2026-01-01 00:00:00Z").is_err());
    }
}
