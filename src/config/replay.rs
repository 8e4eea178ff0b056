//! Writes the effective run as a config file: `kvmark --config FILE` then reruns
//! the identical grid (workloads, engines and their options, threads, connections,
//! pipeline depths, batch sizes, budget, repeats) with the identical seeds.

use std::fmt::Write as _;
use std::path::Path;

use crate::probe::build::GIT_COMMIT;
use crate::report::setup::Outputs;
use crate::run::Plan;
use crate::workload::Budget;

/// The config text of `plan` reporting to `outputs`. Fails when a value cannot be
/// written faithfully (a line break, or whitespace followed by `;` or `#`, which a
/// reader would take for a comment).
pub fn render(plan: &Plan, outputs: &Outputs) -> Result<String, String> {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# kvmark replay config, written by kvmark {} (commit {GIT_COMMIT}).",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(
        s,
        "# `kvmark --config THIS_FILE` reruns the same grid with the same seeds; any flag\n\
         # given with it overrides the value here."
    );
    s.push_str("\n[bench]\n");
    let mut put = |key: &str, value: String| -> Result<(), String> {
        check(key, &value)?;
        let _ = writeln!(s, "{key} = {value}");
        Ok(())
    };
    for wl in &plan.workloads {
        put("workload", abs(wl.path()))?;
    }
    if let Some(format) = plan.trace_format {
        put("format", format.name().to_string())?;
    }
    if plan.trace_split != crate::workload::trace::TraceSplit::Line {
        put("trace_split", plan.trace_split.name().to_string())?;
    }
    if let Some(x) = plan.speed {
        put("speed", x.to_string())?;
    }
    put(
        "backend",
        plan.engines.iter().map(|e| e.name).collect::<Vec<_>>().join(","),
    )?;
    put("threads", list(&plan.threads))?;
    put("connections", list(&plan.connections))?;
    put("pipeline", list(&plan.pipeline))?;
    if plan.reconnect_every > 0 {
        put("reconnect_every", plan.reconnect_every.to_string())?;
    }
    if let Some(batch) = &plan.batch {
        put("batch", list(batch))?;
    }
    match plan.budget {
        Budget::Ops(n) => put("ops", n.to_string())?,
        // Rust prints the shortest text that reads back as the same f64.
        Budget::Secs(secs) => put("secs", secs.to_string())?,
    }
    put("repeat", plan.repeat.to_string())?;
    put("users", plan.params.users.to_string())?;
    put("items", plan.params.items.to_string())?;
    put("seed", plan.params.seed.to_string())?;
    if let Some(n) = plan.load_threads {
        put("seed_threads", n.to_string())?;
    }
    put("seed_once", plan.load_once.to_string())?;
    put("keep_data", plan.keep_data.to_string())?;
    match &plan.use_existing {
        Some(crate::engine::StorePlace::Dir(dir)) => put("use_existing", abs(dir))?,
        Some(crate::engine::StorePlace::Namespace(name)) => put("use_existing", name.clone())?,
        _ => {}
    }
    put("settle", plan.settle.to_string())?;
    put(
        "load_secs",
        plan.load_limit.map_or(0.0, |l| l.as_secs_f64()).to_string(),
    )?;
    if let Some(dir) = &plan.data_dir {
        put("data_dir", abs(dir))?;
    }
    if let Some(t) = plan.timeline {
        put("timeline", t.as_secs_f64().to_string())?;
    }
    put("probe", plan.probes.names().join(","))?;
    if !plan.rates.is_empty() {
        put(
            "rate",
            plan.rates.iter().map(|r| r.text.as_str()).collect::<Vec<_>>().join(","),
        )?;
    }
    if !plan.rates.is_empty() || plan.slo.is_some() {
        put("arrival", plan.arrival.name().to_string())?;
    }
    if let Some(w) = plan.warmup {
        put("warmup", w.as_secs_f64().to_string())?;
    }
    if let Some(slo) = &plan.slo {
        put("slo", slo.text.clone())?;
        put("slo_secs", plan.slo_secs.to_string())?;
    }
    put("auto_plot", outputs.auto_plot.to_string())?;
    // A segment replays as the same segment (its shares and random streams); the
    // common start has passed, so a new one is given on the command line.
    if plan.segment.is_part() {
        put("segment", plan.segment.label())?;
    }
    let ep = &plan.epochs;
    if let Some(n) = ep.count {
        put("epochs", n.to_string())?;
    }
    if let Some(n) = ep.extend_ops {
        put("extend_ops", n.to_string())?;
    }
    if let Some(n) = ep.extend_bytes {
        put("extend_bytes", n.to_string())?;
    }
    if let Some(d) = &ep.extend_dist {
        put(
            "extend_dist",
            if d.is_some() { "zipfian" } else { "uniform" }.to_string(),
        )?;
    }
    if let Some(modes) = &ep.modes {
        put("ivs_mode", modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(","))?;
    }
    if let Some(f) = ep.scale {
        put("scale", f.to_string())?;
    }
    if ep.verify {
        put("ivs_verify", "true".to_string())?;
    }
    if plan.verify {
        put("verify", "true".to_string())?;
    }
    put(
        "max_value_bytes",
        plan.max_value_bytes
            .map_or_else(|| "none".to_string(), |n| n.to_string()),
    )?;
    if let Some(c) = &plan.size_classes {
        put(
            "size_classes",
            c.bounds().iter().map(u64::to_string).collect::<Vec<_>>().join(","),
        )?;
    }
    if plan.pin {
        put("pin", "true".to_string())?;
    }
    for (k, v) in &plan.ycsb.overrides {
        put("property", format!("{k}={v}"))?;
    }
    if plan.ycsb.load {
        put("ycsb_load", "true".to_string())?;
    }
    if plan.ycsb.run {
        put("ycsb_run", "true".to_string())?;
    }
    match &outputs.report_dir {
        Some(dir) => put("report_dir", abs(dir))?,
        None => put(
            "report",
            outputs.sinks.iter().map(|s| s.to_item()).collect::<Vec<_>>().join(","),
        )?,
    }
    for engine in &plan.engines {
        let Some(opts) = plan.engine_options.get(engine.name).filter(|o| !o.is_empty()) else {
            continue;
        };
        let _ = writeln!(s, "\n[{}]", engine.name);
        for (k, v) in opts.iter() {
            check(k, v)?;
            // A password in a server URL is masked: it comes back from the environment.
            let _ = writeln!(s, "{k} = {}", crate::engine::net::mask_password(v));
        }
    }
    Ok(s)
}

fn list(v: &[usize]) -> String {
    v.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

fn abs(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// Refuses values an INI reader would not read back unchanged.
fn check(key: &str, value: &str) -> Result<(), String> {
    let mut prev_space = false;
    for c in value.chars() {
        if c == '\n' || c == '\r' {
            return Err(format!(
                "cannot write {key} to a config file: its value has a line break"
            ));
        }
        if (c == ';' || c == '#') && prev_space {
            return Err(format!(
                "cannot write {key} = {value} to a config file: whitespace before '{c}' would start a comment"
            ));
        }
        prev_space = c.is_whitespace();
    }
    if value.starts_with([';', '#']) || value.trim() != value {
        return Err(format!(
            "cannot write {key} = {value} to a config file: it would not read back unchanged"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_would_not_read_back_are_refused() {
        assert!(check("k", "{a=1;b=2}").is_ok());
        assert!(check("k", "a ;b").is_err());
        assert!(check("k", "a\nb").is_err());
        assert!(check("k", "#x").is_err());
        assert!(check("k", " x").is_err());
    }
}
