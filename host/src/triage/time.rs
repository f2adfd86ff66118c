//! Seconds since the epoch as a UTC date and time, with no time zone
//! database (the capture kernel has none).

/// `seconds` as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc(seconds: i64) -> String {
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC", rest / 3600, rest / 60 % 60, rest % 60)
}

/// `seconds` in ISO 8601's basic format, `YYYYMMDDTHHMMSSZ` (what S3's
/// signatures carry).
pub fn utc_basic(seconds: i64) -> String {
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z", rest / 3600, rest / 60 % 60, rest % 60)
}

/// The proleptic Gregorian date of a day count from 1970-01-01: eras of
/// 400 years (146,097 days) that start on March 1st, so that the leap day
/// ends each year.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468; // days from 0000-03-01
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn dates_of_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
        assert_eq!(utc(-1), "1969-12-31 23:59:59 UTC");
        assert_eq!(super::utc_basic(1_369_353_600), "20130524T000000Z");
    }
}
