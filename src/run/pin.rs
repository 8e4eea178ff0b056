//! CPU pinning (`--pin`, keybench's flag): worker thread t runs only on the t-th CPU
//! of the set this process may use, wrapping when threads outnumber CPUs (an even,
//! repeatable stacking). The set is read once, when pinning is switched on; each
//! worker pins itself once, when it starts, never per operation.

use std::sync::OnceLock;

/// The CPUs this process may run on, in order, when `--pin` is on.
static CPUS: OnceLock<Vec<usize>> = OnceLock::new();

/// Switches pinning on for every crew from now on; returns the CPUs workers will be
/// pinned to, or an error saying why pinning is impossible here.
pub fn enable() -> Result<&'static [usize], String> {
    if let Some(cpus) = CPUS.get() {
        return Ok(cpus);
    }
    let cpus = allowed_cpus()?;
    if cpus.is_empty() {
        return Err("--pin: this process may run on no CPU (sched_getaffinity returned an empty set)".into());
    }
    Ok(CPUS.get_or_init(|| cpus))
}

/// Pins the calling thread, worker `t`, when pinning is on. Returns the CPU, or None
/// when pinning is off; an error when the kernel refused.
pub fn pin_worker(t: usize) -> Result<Option<usize>, String> {
    let Some(cpus) = CPUS.get() else {
        return Ok(None);
    };
    let cpu = cpus[t % cpus.len()];
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write only inside it, and
    // sched_setaffinity(0, ...) reads it for the calling thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(format!(
            "--pin: cannot pin worker {t} to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(Some(cpu))
}

/// The CPU the calling thread may run on, if exactly one (what a pinned worker sees).
pub fn current_single_cpu() -> Option<usize> {
    let cpus = allowed_cpus().ok()?;
    (cpus.len() == 1).then(|| cpus[0])
}

/// The CPUs the calling thread may run on.
fn allowed_cpus() -> Result<Vec<usize>, String> {
    // SAFETY: as above; sched_getaffinity fills the set for the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(format!(
                "--pin: sched_getaffinity failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// "0-3,6": CPUs as ranges, for the run header.
pub fn describe(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_compactly() {
        assert_eq!(describe(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(describe(&[5]), "5");
        assert_eq!(describe(&[]), "");
    }
}
