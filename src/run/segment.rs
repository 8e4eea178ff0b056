//! Scale-out: one process as segment I of N of a run that N processes (on one machine
//! or many, started by any launcher) make together.
//!
//! Segment I of N with T workers behaves exactly as workers I*T .. I*T+T-1 of one
//! process running N*T workers: every share of work (a count budget, a target rate, a
//! load's key range, a spec's insert sequence), every worker's random stream (seeded
//! from the seed and the global worker index) and every open-loop schedule is the one
//! that global worker would have. So N segments together perform the operations one
//! process with N*T workers performs, by construction, and each segment alone is
//! reproducible. The load is partitioned the same way: each segment loads its workers'
//! share, and `--start-at` holds every segment's first timed phase for the common start.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Which part of a scaled-out run this process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// 0-based index.
    pub index: usize,
    /// How many segments the run has.
    pub count: usize,
}

/// The most segments a run may have (far past any cluster a client fleet needs; a
/// larger count is a typo).
pub const MAX_SEGMENTS: usize = 65_536;

/// The variables `--segment auto` reads, per launcher: (index, count, launcher name).
/// Kubernetes gives an Indexed Job's pods only the index; the count comes from
/// `--segment-count` or [`COUNT_ENV`].
const LAUNCHERS: [(&str, Option<&str>, &str); 4] = [
    ("OMPI_COMM_WORLD_RANK", Some("OMPI_COMM_WORLD_SIZE"), "Open MPI"),
    ("SLURM_PROCID", Some("SLURM_NTASKS"), "Slurm"),
    ("PMI_RANK", Some("PMI_SIZE"), "a PMI launcher (MPICH, Intel MPI)"),
    ("JOB_COMPLETION_INDEX", None, "a Kubernetes Indexed Job"),
];

/// Where `--segment auto` takes the segment count from when the launcher gives only
/// the index (a Kubernetes Indexed Job), unless `--segment-count` says it.
pub const COUNT_ENV: &str = "KVMARK_SEGMENT_COUNT";

/// A job identity given by hand, for any launcher (it wins over the launchers' own).
pub const JOB_ENV: &str = "KVMARK_JOB_ID";

/// What every segment of one launch shares and another launch does not: the name
/// of the job (one `mpirun`, one Slurm step, one Kubernetes Job), which names a
/// server engine's shared namespace and the place where the segments meet when no
/// `--start-at` is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The identity as the launcher gives it.
    pub id: String,
    /// Where it came from: the variable (or variables) read.
    pub from: String,
}

impl Job {
    /// Reads the job identity of the launcher that started this process: `KVMARK_JOB_ID`,
    /// then PMIx's namespace (Open MPI 4 and later, Slurm with PMIx), Open MPI's job id,
    /// Slurm's job and step ids, and a Kubernetes Indexed Job's name (its pods are
    /// named JOB-INDEX-SUFFIX). None when no launcher gives one.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Option<Job> {
        let set = |name: &str| env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let job = |id: String, from: &str| {
            Some(Job {
                id,
                from: from.to_string(),
            })
        };
        if let Some(id) = set(JOB_ENV) {
            return job(id, JOB_ENV);
        }
        if let Some(id) = set("PMIX_NAMESPACE") {
            return job(id, "PMIX_NAMESPACE");
        }
        if let Some(id) = set("OMPI_MCA_ess_base_jobid") {
            return job(id, "OMPI_MCA_ess_base_jobid");
        }
        if let Some(id) = set("SLURM_JOB_ID") {
            // Each srun in one allocation is a step of its own, and a run of its own.
            return match set("SLURM_STEP_ID") {
                Some(step) => job(format!("{id}.{step}"), "SLURM_JOB_ID and SLURM_STEP_ID"),
                None => job(id, "SLURM_JOB_ID"),
            };
        }
        if let (Some(index), Some(pod)) = (set("JOB_COMPLETION_INDEX"), set("HOSTNAME")) {
            let mut parts = pod.rsplitn(3, '-');
            let (_suffix, pod_index, name) = (parts.next(), parts.next(), parts.next());
            if let (Some(pod_index), Some(name)) = (pod_index, name)
                && pod_index == index
                && !name.is_empty()
            {
                return job(name.to_string(), "the Indexed Job's pod name (HOSTNAME)");
            }
        }
        None
    }

    /// "154992641 (from PMIX_NAMESPACE)".
    pub fn describe(&self) -> String {
        format!("{} (from {})", self.id, self.from)
    }
}

impl Segment {
    /// The whole run: one process.
    pub const WHOLE: Segment = Segment { index: 0, count: 1 };

    /// True for a segment of a scaled-out run (not the whole run).
    pub fn is_part(self) -> bool {
        self.count > 1
    }

    /// The global index of this segment's worker `t` of `workers`.
    pub fn worker(self, t: usize, workers: usize) -> usize {
        self.index * workers + t
    }

    /// Workers of the whole run when each segment runs `workers`.
    pub fn workers(self, workers: usize) -> usize {
        self.count * workers
    }

    /// "2/3": as `--segment` takes it, 0-based.
    pub fn label(self) -> String {
        format!("{}/{}", self.index, self.count)
    }

    /// Parses `--segment`: `I/N` (0 <= I < N) or `auto`, which reads the launcher's
    /// variables through `env`; `count` is `--segment-count`.
    pub fn parse(text: &str, count: Option<usize>, env: &dyn Fn(&str) -> Option<String>) -> Result<Segment, String> {
        let text = text.trim();
        if text == "auto" {
            return Self::from_launcher(count, env);
        }
        let bad = |why: &str| format!("--segment '{text}': {why} (give I/N with 0 <= I < N, such as 0/4, or auto)");
        let (i, n) = text.split_once('/').ok_or_else(|| bad("expected I/N"))?;
        let index = whole(i).ok_or_else(|| bad("I is not a whole number"))?;
        let n = whole(n).ok_or_else(|| bad("N is not a whole number"))?;
        let seg = Self::checked(index, n).map_err(|why| bad(&why))?;
        if let Some(c) = count
            && c != seg.count
        {
            return Err(format!(
                "--segment {text} and --segment-count {c} disagree on the segment count"
            ));
        }
        Ok(seg)
    }

    fn checked(index: usize, count: usize) -> Result<Segment, String> {
        if count == 0 || count > MAX_SEGMENTS {
            return Err(format!("N must be 1 to {MAX_SEGMENTS}"));
        }
        if index >= count {
            return Err(format!("I must be below N ({index} is not below {count})"));
        }
        Ok(Segment { index, count })
    }

    /// `--segment auto`: the first launcher whose index variable is set gives I and N.
    fn from_launcher(count: Option<usize>, env: &dyn Fn(&str) -> Option<String>) -> Result<Segment, String> {
        for (index_var, count_var, launcher) in LAUNCHERS {
            let Some(index_text) = env(index_var) else {
                continue;
            };
            let index = whole(&index_text).ok_or_else(|| {
                format!("--segment auto: {index_var}='{index_text}' (set by {launcher}) is not a whole number")
            })?;
            let (n, from) = match count_var {
                Some(var) => {
                    let text = env(var).ok_or_else(|| {
                        format!("--segment auto: {index_var} is set (by {launcher}) but {var} is not")
                    })?;
                    let n = whole(&text).ok_or_else(|| {
                        format!("--segment auto: {var}='{text}' (set by {launcher}) is not a whole number")
                    })?;
                    if let Some(c) = count
                        && c != n
                    {
                        return Err(format!(
                            "--segment auto: {var}={n} (set by {launcher}) and --segment-count {c} disagree"
                        ));
                    }
                    (n, var.to_string())
                }
                None => match count {
                    Some(c) => (c, "--segment-count".to_string()),
                    None => {
                        let text = env(COUNT_ENV).ok_or_else(|| {
                            format!(
                                "--segment auto: {index_var} is set (by {launcher}), which gives no segment count; \
                                 give --segment-count N or set {COUNT_ENV} (the Job's completions)"
                            )
                        })?;
                        let n = whole(&text)
                            .ok_or_else(|| format!("--segment auto: {COUNT_ENV}='{text}' is not a whole number"))?;
                        (n, COUNT_ENV.to_string())
                    }
                },
            };
            return Self::checked(index, n)
                .map_err(|why| format!("--segment auto: {index_var}={index} and {from}={n} from {launcher}: {why}"));
        }
        let names: Vec<&str> = LAUNCHERS.iter().map(|l| l.0).collect();
        Err(format!(
            "--segment auto: no launcher variable is set (looked for {}); start kvmark with mpirun, srun or an \
             Indexed Job, or give --segment I/N",
            names.join(", ")
        ))
    }
}

fn whole(text: &str) -> Option<usize> {
    let t = text.trim();
    (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
        .then(|| t.parse().ok())
        .flatten()
}

/// The latest `--start-at` accepted: a day ahead (further is a typo, and would leave
/// processes waiting unnoticed).
pub const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// Parses `--start-at`: RFC 3339 (`2026-11-25T21:00:00Z`, with an offset or
/// fractions) or Unix seconds (`1795000000`, fractions allowed). Refuses a time more
/// than a day after `now`; a time already passed is returned with `true` (the caller
/// warns and starts at once).
pub fn parse_start_at(text: &str, now: SystemTime) -> Result<(SystemTime, bool), String> {
    let t = text.trim();
    let at = if let Ok(secs) = t.parse::<f64>() {
        if !(secs.is_finite() && secs >= 0.0) {
            return Err(format!(
                "--start-at '{text}': not a time (give RFC 3339 or Unix seconds)"
            ));
        }
        UNIX_EPOCH + Duration::from_secs_f64(secs)
    } else {
        let parsed = time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).map_err(|e| {
            format!("--start-at '{text}': {e} (give RFC 3339 such as 2026-11-25T21:00:00Z, or Unix seconds)")
        })?;
        let ns = parsed.unix_timestamp_nanos();
        if ns < 0 {
            return Err(format!("--start-at '{text}': before 1970"));
        }
        UNIX_EPOCH + Duration::from_nanos(ns as u64)
    };
    match at.duration_since(now) {
        Ok(ahead) if ahead > MAX_START_AHEAD => Err(format!(
            "--start-at '{text}' is {:.0} s ahead, more than a day: check the date and the time zone",
            ahead.as_secs_f64()
        )),
        Ok(_) => Ok((at, false)),
        Err(_) => Ok((at, true)),
    }
}

/// Nanoseconds since the Unix epoch.
pub fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn explicit_segments_parse_and_bad_ones_are_refused() {
        let none = env_of(&[]);
        assert_eq!(
            Segment::parse("2/3", None, &none).unwrap(),
            Segment { index: 2, count: 3 }
        );
        assert_eq!(Segment::parse("0/1", None, &none).unwrap(), Segment::WHOLE);
        for bad in ["3/3", "1/0", "a/2", "2", "-1/2", "1/2/3", ""] {
            assert!(Segment::parse(bad, None, &none).is_err(), "{bad} accepted");
        }
        assert!(Segment::parse("1/2", Some(3), &none).unwrap_err().contains("disagree"));
    }

    #[test]
    fn auto_reads_each_launcher() {
        let mpi = env_of(&[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "3")]);
        assert_eq!(
            Segment::parse("auto", None, &mpi).unwrap(),
            Segment { index: 1, count: 3 }
        );
        let slurm = env_of(&[("SLURM_PROCID", "4"), ("SLURM_NTASKS", "8")]);
        assert_eq!(
            Segment::parse("auto", None, &slurm).unwrap(),
            Segment { index: 4, count: 8 }
        );
        let pmi = env_of(&[("PMI_RANK", "0"), ("PMI_SIZE", "2")]);
        assert_eq!(
            Segment::parse("auto", None, &pmi).unwrap(),
            Segment { index: 0, count: 2 }
        );
        let k8s = env_of(&[("JOB_COMPLETION_INDEX", "5")]);
        assert_eq!(
            Segment::parse("auto", Some(6), &k8s).unwrap(),
            Segment { index: 5, count: 6 }
        );
        let k8s_env = env_of(&[("JOB_COMPLETION_INDEX", "5"), (COUNT_ENV, "7")]);
        assert_eq!(
            Segment::parse("auto", None, &k8s_env).unwrap(),
            Segment { index: 5, count: 7 }
        );
    }

    #[test]
    fn auto_refuses_missing_and_inconsistent_values() {
        let err = |pairs: &[(&str, &str)], count| Segment::parse("auto", count, &env_of(pairs)).unwrap_err();
        assert!(err(&[], None).contains("no launcher variable"));
        assert!(err(&[("OMPI_COMM_WORLD_RANK", "1")], None).contains("OMPI_COMM_WORLD_SIZE is not"));
        assert!(err(&[("SLURM_PROCID", "3"), ("SLURM_NTASKS", "3")], None).contains("must be below"));
        assert!(err(&[("PMI_RANK", "x"), ("PMI_SIZE", "3")], None).contains("not a whole number"));
        assert!(err(&[("JOB_COMPLETION_INDEX", "1")], None).contains(COUNT_ENV));
        assert!(err(&[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "3")], Some(4)).contains("disagree"));
    }

    #[test]
    fn the_job_identity_comes_from_each_launcher() {
        let id = |pairs: &[(&str, &str)]| Job::from_env(&env_of(pairs)).map(|j| (j.id, j.from));
        assert_eq!(id(&[]), None);
        assert_eq!(
            id(&[("PMIX_NAMESPACE", "1549926"), ("OMPI_MCA_ess_base_jobid", "77")]),
            Some(("1549926".into(), "PMIX_NAMESPACE".into()))
        );
        assert_eq!(
            id(&[(JOB_ENV, "mine"), ("SLURM_JOB_ID", "12")]).unwrap().0,
            "mine",
            "given by hand, it wins"
        );
        assert_eq!(id(&[("SLURM_JOB_ID", "12"), ("SLURM_STEP_ID", "3")]).unwrap().0, "12.3");
        assert_eq!(id(&[("SLURM_JOB_ID", "12")]).unwrap().0, "12");
        let k8s = [("JOB_COMPLETION_INDEX", "4"), ("HOSTNAME", "kvmark-bench-4-x7k2p")];
        assert_eq!(id(&k8s).unwrap().0, "kvmark-bench");
        // A pod name that does not end in the index is not an Indexed Job's.
        assert_eq!(
            id(&[("JOB_COMPLETION_INDEX", "4"), ("HOSTNAME", "worker-7-abcde")]),
            None
        );
        assert_eq!(id(&[("HOSTNAME", "kvmark-bench-4-x7k2p")]), None);
        assert_eq!(id(&[(JOB_ENV, "  ")]), None, "blank is unset");
    }

    #[test]
    fn segments_are_slices_of_one_worker_range() {
        let seg = Segment { index: 2, count: 3 };
        assert_eq!((seg.worker(0, 4), seg.worker(3, 4), seg.workers(4)), (8, 11, 12));
    }

    #[test]
    fn start_times_parse_and_are_bounded() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let (at, passed) = parse_start_at("1800000060.5", now).unwrap();
        assert_eq!((unix_ns(at), passed), (1_800_000_060_500_000_000, false));
        let (at, _) = parse_start_at("2027-01-15T09:00:30+01:00", now).unwrap();
        assert_eq!(unix_ns(at), 1_800_000_030_000_000_000);
        assert!(parse_start_at("1799999000", now).unwrap().1, "a passed time is flagged");
        assert!(
            parse_start_at("1800090000", now)
                .unwrap_err()
                .contains("more than a day")
        );
        assert!(parse_start_at("tomorrow", now).is_err());
    }
}
