//! The store's settings and the knobs that set them: the service time's distribution,
//! the stalls and the fault rates.

use rand_distr::{Distribution, Exp1};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::clock;
use crate::engine::{KnobDef, KnobTable, KnobValue, OptionError};

/// The simulated behaviour a store is opened with.
#[derive(Debug, Clone, Copy)]
pub(super) struct Settings {
    pub(super) service: Service,
    pub(super) remote: bool,
    pub(super) stall_ns: u64,
    pub(super) every_ns: u64,
    pub(super) settle_ns: u64,
    pub(super) faults: Faults,
}

/// One call in N of each kind goes wrong (0: never).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Faults {
    pub(super) drop_writes: u64,
    pub(super) stale_reads: u64,
    pub(super) corrupt_reads: u64,
    pub(super) resurrect: u64,
    pub(super) fail: u64,
}

impl Faults {
    pub(super) fn any(&self) -> bool {
        *self != Faults::default()
    }
}

pub(super) static KNOBS: KnobTable<Settings> = KnobTable::<Settings>::new(
    "sim",
    || Settings {
        service: Service::None,
        remote: false,
        stall_ns: 0,
        every_ns: 1_000_000_000,
        settle_ns: 0,
        faults: Faults::default(),
    },
    &[
        KnobDef {
            name: "service",
            help: "least time per call, spun on the clock: 100us fixed, exp:100us (exponential mean), \
                   uniform:50us..150us",
            default: || "0".to_string(),
            set: |s, v| Service::parse(v.text).map(|x| s.service = x).map_err(|e| v.refuse(e)),
        },
        KnobDef {
            name: "remote",
            help: "the service time is a pretend server's: with --connections the thread runs its other \
                   connections while a call waits",
            default: || "false".to_string(),
            set: |s, v| v.bool().map(|b| s.remote = b),
        },
        KnobDef {
            name: "stall",
            help: "store-wide stall length: calls arriving during one block until it ends (e.g. 50ms)",
            default: || "0".to_string(),
            set: |s, v| duration_ns(v).map(|n| s.stall_ns = n),
        },
        KnobDef {
            name: "stall_every",
            help: "stall period, aligned to the store's open time (first stall one period after opening)",
            default: || "1s".to_string(),
            set: |s, v| duration_ns(v).map(|n| s.every_ns = n),
        },
        KnobDef {
            name: "settle",
            help: "how long background work takes to settle: each --settle wait lasts this long (e.g. 200ms)",
            default: || "0".to_string(),
            set: |s, v| duration_ns(v).map(|n| s.settle_ns = n),
        },
        KnobDef {
            name: "drop_writes",
            help: "fault: acknowledge but drop 1 in N writes (puts, appends, batch pairs); 0 is off",
            default: || "0".to_string(),
            set: |s, v| v.num::<u64>().map(|n| s.faults.drop_writes = n),
        },
        KnobDef {
            name: "stale_reads",
            help: "fault: 1 in N gets returns the key's value before its latest put; 0 is off",
            default: || "0".to_string(),
            set: |s, v| v.num::<u64>().map(|n| s.faults.stale_reads = n),
        },
        KnobDef {
            name: "corrupt_reads",
            help: "fault: 1 in N gets returns its value with the last byte flipped; 0 is off",
            default: || "0".to_string(),
            set: |s, v| v.num::<u64>().map(|n| s.faults.corrupt_reads = n),
        },
        KnobDef {
            name: "resurrect",
            help: "fault: acknowledge but skip 1 in N deletes, so the key comes back; 0 is off",
            default: || "0".to_string(),
            set: |s, v| v.num::<u64>().map(|n| s.faults.resurrect = n),
        },
        KnobDef {
            name: "fail",
            help: "fault: 1 in N calls fails with an error and does nothing; 0 is off",
            default: || "0".to_string(),
            set: |s, v| v.num::<u64>().map(|n| s.faults.fail = n),
        },
    ],
)
.with_check(|s| {
    if s.stall_ns > 0 && s.stall_ns >= s.every_ns {
        return Err((
            "stall",
            format!(
                "option stall ({} ns) must be shorter than option stall_every ({} ns)",
                s.stall_ns, s.every_ns
            ),
        ));
    }
    Ok(())
});

/// How long a call takes at least.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Service {
    None,
    Fixed(u64),
    Exp(f64),
    Uniform(u64, u64),
}

impl Service {
    fn parse(text: &str) -> Result<Service, String> {
        let t = text.trim();
        let dur = clock::parse_duration_ns;
        if t == "0" {
            return Ok(Service::None);
        }
        if let Some(mean) = t.strip_prefix("exp:") {
            let mean = dur(mean)?;
            return Ok(if mean == 0 {
                Service::None
            } else {
                Service::Exp(mean as f64)
            });
        }
        if let Some(range) = t.strip_prefix("uniform:") {
            let (lo, hi) = range
                .split_once("..")
                .ok_or_else(|| "expected uniform:LOW..HIGH, e.g. uniform:50us..150us".to_string())?;
            let (lo, hi) = (dur(lo)?, dur(hi)?);
            if lo > hi {
                return Err("the low end is above the high end".to_string());
            }
            return Ok(Service::Uniform(lo, hi));
        }
        if t.contains(':') {
            return Err("unknown distribution (use 100us, exp:100us or uniform:50us..150us)".to_string());
        }
        let ns = dur(t)?;
        Ok(if ns == 0 { Service::None } else { Service::Fixed(ns) })
    }

    #[inline]
    pub(super) fn draw(self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        match self {
            Service::None => 0,
            Service::Fixed(ns) => ns,
            Service::Exp(mean) => {
                let e: f64 = Exp1.sample(rng);
                (mean * e) as u64
            }
            Service::Uniform(lo, hi) => {
                let u: f64 = rand_distr::StandardUniform.sample(rng);
                lo + ((hi - lo) as f64 * u) as u64
            }
        }
    }
}

/// A duration knob's value, where "0" means none.
fn duration_ns(v: &KnobValue<'_>) -> Result<u64, OptionError> {
    match v.text.trim() {
        "0" => Ok(0),
        t => clock::parse_duration_ns(t).map_err(|e| v.refuse(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_specs_parse() {
        assert_eq!(Service::parse("0"), Ok(Service::None));
        assert_eq!(Service::parse("100us"), Ok(Service::Fixed(100_000)));
        assert_eq!(Service::parse("exp:1ms"), Ok(Service::Exp(1e6)));
        assert_eq!(
            Service::parse("uniform:50us..150us"),
            Ok(Service::Uniform(50_000, 150_000))
        );
        for bad in [
            "fast",
            "100",
            "gauss:1ms",
            "uniform:5us",
            "uniform:9us..1us",
            "exp:-1ms",
        ] {
            assert!(Service::parse(bad).is_err(), "{bad}");
        }
    }
}
