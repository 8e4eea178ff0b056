//! The common start of a scaled-out run on a server engine when no `--start-at` is
//! given: the segments meet at the server itself.
//!
//! Each segment, when it reaches its first timed phase (its share of the load done),
//! writes its arrival time (Unix nanoseconds) under its own key in a store of its own
//! on the server, the job's meeting place, named from the same tag as the shared
//! namespace. It then reads the other segments' keys until every one is there; the
//! common start is the latest arrival plus [`MARGIN`], the same absolute time in every
//! segment, which each then waits for as for `--start-at`. So no segment's timed phase
//! starts before the last segment has loaded, and they start together to within their
//! clocks' agreement (the same requirement as `--start-at`; see docs/scale-out.md).
//!
//! The meeting place stays on the server afterwards, as the shared namespace does (no
//! segment knows when the others are done with it). A segment that finds its own key
//! already there is refused: a previous run used the same job identity, and its
//! arrivals would start this one at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::segment::{Job, Segment, unix_ns};
use crate::engine::{EngineInfo, EngineOptions, OpenRequest, ReadBuf, Session, StorePlace};

/// Time from the last arrival to the common start: every segment polls every
/// [`POLL`], so each sees the last arrival well within it, on a loaded machine too.
pub const MARGIN: Duration = Duration::from_secs(2);

/// How long a segment waits for the others before it fails: their loads are equal
/// shares, so they arrive close together; a segment still missing after this much
/// was never started or has failed.
pub const LIMIT: Duration = Duration::from_secs(600);

const POLL: Duration = Duration::from_millis(50);

/// Where and how one segment meets the others.
pub struct Meeting<'a> {
    engine: &'static EngineInfo,
    options: &'a EngineOptions,
    /// The meeting place's name on the server.
    pub namespace: String,
    segment: Segment,
    job: Job,
}

impl<'a> Meeting<'a> {
    /// Segment `segment` of the job `job` meeting at `namespace` on `engine`'s server.
    pub fn new(
        engine: &'static EngineInfo,
        options: &'a EngineOptions,
        namespace: String,
        segment: Segment,
        job: Job,
    ) -> Meeting<'a> {
        Meeting {
            engine,
            options,
            namespace,
            segment,
            job,
        }
    }

    /// Announces this segment's arrival and waits for every other segment's; returns
    /// the common start. Fails on the server's error, on a previous run's arrival
    /// under this job identity, after [`LIMIT`] without every segment, and when
    /// `abort` is set (Ctrl-C).
    pub fn meet(&self, abort: &AtomicBool) -> Result<SystemTime, String> {
        let server = self.engine.storage.server().map_or("namespace", |s| s.namespace);
        let place = format!("the {server} {}", self.namespace);
        let req = OpenRequest {
            place: StorePlace::Namespace(self.namespace.clone()),
            options: self.options,
            max_value_bytes: None,
        };
        let store = (self.engine.open)(&req).map_err(|e| failed_at(&place, e))?;
        let met = match store.session() {
            Ok(mut s) => self.meet_in(s.as_mut(), abort, &place),
            Err(e) => Err(failed_at(&place, e)),
        };
        // The place stays (see the module's doc); closing only ends the connection.
        let closed = store.close().map_err(|e| failed_at(&place, e));
        let start = met?;
        closed?;
        Ok(start)
    }

    fn meet_in(&self, s: &mut dyn Session, abort: &AtomicBool, place: &str) -> Result<SystemTime, String> {
        let err = |e| failed_at(place, e);
        let count = self.segment.count;
        let mine = arrival_key(self.segment.index);
        let mut buf = ReadBuf::default();
        if s.get(&mine, &mut buf).map_err(err)? {
            return Err(format!(
                "{place} already holds segment {}'s arrival: a previous run used job {}; give this run an identity \
                 of its own ({}=NAME) or a common start (--start-at TIME)",
                self.segment.label(),
                self.job.describe(),
                super::segment::JOB_ENV
            ));
        }
        eprintln!(
            "kvmark: segment {} of job {} waits at {place} for the other {}",
            self.segment.label(),
            self.job.describe(),
            if count == 2 {
                "segment".to_string()
            } else {
                format!("{} segments", count - 1)
            }
        );
        s.put(&mine, unix_ns(SystemTime::now()).to_string().as_bytes())
            .map_err(err)?;
        let until = Instant::now() + LIMIT;
        let mut arrived: Vec<Option<u64>> = vec![None; count];
        loop {
            for (i, slot) in arrived.iter_mut().enumerate().filter(|(_, a)| a.is_none()) {
                if s.get(&arrival_key(i), &mut buf).map_err(err)? {
                    let text = String::from_utf8_lossy(buf.as_slice()).into_owned();
                    *slot = Some(text.trim().parse().map_err(|_| {
                        format!("{place}: segment {i}'s arrival is '{text}', not a time: is another program using it?")
                    })?);
                }
            }
            let missing: Vec<usize> = (0..count).filter(|&i| arrived[i].is_none()).collect();
            if missing.is_empty() {
                let last = arrived.iter().flatten().copied().max().unwrap_or(0);
                return Ok(UNIX_EPOCH + Duration::from_nanos(last) + MARGIN);
            }
            if abort.load(Ordering::Relaxed) {
                return Err("interrupted while waiting for the other segments".to_string());
            }
            if Instant::now() >= until {
                let shown: Vec<String> = missing.iter().take(10).map(usize::to_string).collect();
                return Err(format!(
                    "segment{} {}{} of job {} did not reach {place} within {} s: were they started (with the same \
                     job identity and segment count), and did their loads fail?",
                    if missing.len() == 1 { "" } else { "s" },
                    shown.join(", "),
                    if missing.len() > 10 { ", ..." } else { "" },
                    self.job.describe(),
                    LIMIT.as_secs()
                ));
            }
            std::thread::sleep(POLL);
        }
    }
}

/// The server's error while meeting at `place`.
fn failed_at(place: &str, e: crate::engine::EngineError) -> String {
    format!("meeting the other segments at {place}: {}", e.message)
}

/// The key segment `index` writes its arrival under.
fn arrival_key(index: usize) -> Vec<u8> {
    format!("arrived/{index:05}").into_bytes()
}
