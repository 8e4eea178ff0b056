//! Waiting on the calibrated clock precisely: sleep for most of a gap, spin the rest.
//!
//! A sleep gives the core back but ends late (Linux adds the thread's timer slack,
//! 50 us by default, plus the wake-up latency); a spin ends within one clock read but
//! burns the core. Waiters therefore sleep until [`SPIN_NS`] before the target and spin
//! from there, and paced workers set their timer slack to 1 ns ([`precise_sleeps`]).

use std::time::Duration;

use quanta::Clock;

/// The last stretch of a wait, spent spinning on the clock instead of sleeping: the
/// margin a sleep may overshoot by on a loaded machine.
pub const SPIN_NS: u64 = 50_000;

/// Asks the kernel to end this thread's sleeps as close to the requested time as it
/// can (timer slack 1 ns instead of 50 us). It affects only the calling thread.
pub fn precise_sleeps() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches only this thread.
        let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// One step of a wait with `left_ns` to go: sleeps until [`SPIN_NS`] before the end
/// (never longer than `max_sleep_ns` at once, so the caller can re-check its stop
/// conditions), or spins once when already that close. The caller re-reads the clock.
#[inline]
pub fn pause(left_ns: u64, max_sleep_ns: u64) {
    if left_ns > SPIN_NS {
        std::thread::sleep(Duration::from_nanos((left_ns - SPIN_NS).min(max_sleep_ns)));
    } else {
        std::hint::spin_loop();
    }
}

/// Parses a duration with a unit, "250us", "1.5ms", "2s", "80ns" ("µs" works too), into
/// nanoseconds. Used by `--slo` and the sim engine's knobs.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| c.is_alphabetic() || c == 'µ').unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" => return Err(format!("'{t}' needs a unit: ns, us, ms or s")),
        other => return Err(format!("unknown time unit '{other}' in '{t}' (use ns, us, ms or s)")),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("'{t}' is not a duration such as 250us or 2ms"))?;
    if !(value.is_finite() && value >= 0.0) || value * scale > u64::MAX as f64 {
        return Err(format!("'{t}' is out of range"));
    }
    Ok((value * scale).round() as u64)
}

/// Blocks until `until_ns` nanoseconds after the raw reading `origin`, then returns
/// the raw reading that ended the wait. Sleeps until `spin_ns` before the end and
/// spins from there: [`SPIN_NS`] on a thread with [`precise_sleeps`], more (a few
/// hundred microseconds) where the default timer slack applies.
pub fn wait_until(clock: &Clock, origin: u64, until_ns: u64, spin_ns: u64) -> u64 {
    loop {
        let now = clock.raw();
        let now_ns = clock.delta_as_nanos(origin, now);
        if now_ns >= until_ns {
            return now;
        }
        let left = until_ns - now_ns;
        if left > spin_ns {
            std::thread::sleep(Duration::from_nanos(left - spin_ns));
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_a_known_unit() {
        assert_eq!(parse_duration_ns("250us"), Ok(250_000));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns(" 2 s"), Ok(2_000_000_000));
        assert_eq!(parse_duration_ns("80ns"), Ok(80));
        assert_eq!(parse_duration_ns("3µs"), Ok(3_000));
        assert_eq!(parse_duration_ns("0"), Err("'0' needs a unit: ns, us, ms or s".into()));
        assert!(
            parse_duration_ns("5min")
                .unwrap_err()
                .contains("unknown time unit 'min'")
        );
        assert!(parse_duration_ns("-1ms").is_err());
        assert!(parse_duration_ns("ms").is_err());
    }

    #[test]
    fn waits_end_on_time_not_early() {
        precise_sleeps().unwrap();
        let clock = Clock::new();
        for gap in [0u64, 20_000, 300_000, 2_000_000] {
            let origin = clock.raw();
            let end = wait_until(&clock, origin, gap, SPIN_NS);
            let took = clock.delta_as_nanos(origin, end);
            assert!(took >= gap, "woke early: {took} < {gap}");
        }
    }
}
