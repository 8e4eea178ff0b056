//! From the schema to a validated plan: inheritance (section -> group -> operation),
//! defaults, counts and budgets, and every semantic check, each error naming the JSON
//! path it is about.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::schema::{
    CharacterSet, Distribution, EmptySpec, EpochsSpec, ExtendsSpec, GroupSpec, Inherited, InsertsSpec, NumberExpr,
    PointSpec, RangeFormat, RangeSpec, RateSpec, SpecFile, StringExpr, UniformStr, WriteSpec,
};
use super::strings::{Str, mix64};
use crate::kv::pace::{Rate, Wave};
use crate::workload::dist::{Dist, NumExpr, Selector};
use crate::workload::epochs::{DEFAULT_EXTEND_BYTES, EpochDefaults, EpochMode};
use crate::workload::keyranges::KeyRangeParams;
use crate::workload::{Budget, scaled};

/// The operations of a spec, in a group's fixed order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecOp {
    /// `inserts`.
    Insert,
    /// `updates`.
    Update,
    /// `merges`.
    Merge,
    /// `read_modify_writes`.
    ReadModifyWrite,
    /// `point_queries`.
    PointQuery,
    /// `empty_point_queries`.
    EmptyPointQuery,
    /// `range_queries`.
    RangeQuery,
    /// `point_deletes`.
    PointDelete,
    /// `empty_point_deletes`.
    EmptyPointDelete,
    /// `range_deletes`.
    RangeDelete,
    /// `extends`: an append of `len` bytes (kvmark; YCSB-IVS).
    Extend,
}

impl SpecOp {
    /// The field name in a spec.
    pub fn field(self) -> &'static str {
        match self {
            SpecOp::Insert => "inserts",
            SpecOp::Update => "updates",
            SpecOp::Merge => "merges",
            SpecOp::ReadModifyWrite => "read_modify_writes",
            SpecOp::PointQuery => "point_queries",
            SpecOp::EmptyPointQuery => "empty_point_queries",
            SpecOp::RangeQuery => "range_queries",
            SpecOp::PointDelete => "point_deletes",
            SpecOp::EmptyPointDelete => "empty_point_deletes",
            SpecOp::RangeDelete => "range_deletes",
            SpecOp::Extend => "extends",
        }
    }

    /// True for operations that pick a live key.
    pub fn needs_live(self) -> bool {
        matches!(
            self,
            SpecOp::Update
                | SpecOp::Merge
                | SpecOp::ReadModifyWrite
                | SpecOp::PointQuery
                | SpecOp::RangeQuery
                | SpecOp::PointDelete
                | SpecOp::RangeDelete
                | SpecOp::Extend
        )
    }
}

/// How many rows a range covers.
#[derive(Debug, Clone)]
pub enum RangeSize {
    /// A fraction of the live keys (Tectonic's selectivity).
    Selectivity(NumExpr),
    /// A row count (YCSB's scan length).
    ScanLength(NumExpr),
}

/// One operation of a group.
#[derive(Debug, Clone)]
pub struct OpPlan {
    /// Which.
    pub kind: SpecOp,
    /// How many (the group's mix when it is time-bounded).
    pub count: u64,
    /// JSON path, for messages.
    pub path: String,
    /// Key selection (ops on live keys).
    pub selection: Option<Dist>,
    /// Chance of picking a key with a hot prefix.
    pub hot_probability: Option<f64>,
    /// Value expression and its character set (writes).
    pub val: Option<(StringExpr, CharacterSet)>,
    /// Own key expression of an empty op, when it differs from the section's.
    pub key: Option<(StringExpr, CharacterSet)>,
    /// Where that key expression was written (it may be inherited).
    pub key_path: String,
    /// Range size (range ops).
    pub range: Option<RangeSize>,
    /// Range bounds.
    pub format: RangeFormat,
    /// Lifetime of each inserted key in seconds, drawn per key (inserts).
    pub lifetime: Option<NumExpr>,
}

/// One group: a phase.
#[derive(Debug, Clone)]
pub struct GroupPlan {
    /// Phase name.
    pub name: String,
    /// JSON path.
    pub path: String,
    /// Its budget.
    pub budget: Budget,
    /// Target rate: paces this phase open loop.
    pub rate: Option<Rate>,
    /// Operations, in [`SpecOp`] order.
    pub ops: Vec<OpPlan>,
    /// K and L of its inserts.
    pub sorted: Option<(NumExpr, NumExpr)>,
}

impl GroupPlan {
    /// Operations in one pass of the group (its count when count-bounded).
    pub fn total(&self) -> u64 {
        self.ops.iter().map(|o| o.count).sum()
    }
}

/// One section: a key space.
#[derive(Debug, Clone)]
pub struct SectionPlan {
    /// JSON path.
    pub path: String,
    /// The section's key expression and character set (from its inserts, else from
    /// its empty operations).
    pub key: Option<(StringExpr, CharacterSet)>,
    /// Groups in order.
    pub groups: Vec<GroupPlan>,
    /// Keep the order index (range deletes or start-end ranges).
    pub ordered: bool,
    /// Split live keys by hot prefix (some operation sets hot_probability).
    pub hot_classes: bool,
    /// Inserts in one pass of every group.
    pub inserts: u64,
    /// Some inserts give their keys a lifetime, so the live set must find keys by the
    /// tags their expiries report.
    pub lifetimes: bool,
}

/// A validated spec.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Name for reports.
    pub name: String,
    /// The spec's `epochs` block.
    pub epochs: Option<EpochDefaults>,
    /// Value compressibility, in (0, 1].
    pub compression_ratio: f64,
    /// Sections in order.
    pub sections: Vec<SectionPlan>,
}

impl Plan {
    /// (section, group) of each phase, in order.
    pub fn phase_groups(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (s, sec) in self.sections.iter().enumerate() {
            for g in 0..sec.groups.len() {
                out.push((s, g));
            }
        }
        out
    }

    /// True when some insert gives its keys a lifetime.
    pub fn has_lifetimes(&self) -> bool {
        self.sections.iter().any(|s| s.lifetimes)
    }
}

/// Most operations in one group (far beyond any run, far below overflow).
const MAX_OPS: u64 = 1 << 50;

/// Most inserts of a `sorted` group: a thread holds its share of their ids (8 bytes
/// each) at once, to order them.
const MAX_SORTED_INSERTS: u64 = 1 << 28;

/// Longest group duration, in seconds (a year).
const MAX_DURATION: f64 = 365.0 * 24.0 * 3600.0;

/// Longest key lifetime, in seconds: longer draws are cut to it (a year, as good as
/// never within a run).
pub const MAX_LIFETIME: f64 = MAX_DURATION;

/// A lifetime expression: a constant in [0, MAX_LIFETIME] seconds, or a number
/// distribution (whose draws the generator clamps into that range).
fn lifetime_expr(e: &NumberExpr, path: &str) -> Result<NumExpr, String> {
    let e = num_expr(e).map_err(|m| format!("{path}: {m}"))?;
    if let NumExpr::Const(v) = e
        && !(0.0..=MAX_LIFETIME).contains(&v)
    {
        return Err(format!(
            "{path}: give a lifetime in seconds, from 0 to {MAX_LIFETIME}, got {v}"
        ));
    }
    Ok(e)
}

/// Converts a number expression, validating its distribution.
pub fn num_expr(e: &NumberExpr) -> Result<NumExpr, String> {
    match e {
        NumberExpr::Const(v) if v.is_finite() => Ok(NumExpr::Const(*v)),
        NumberExpr::Const(v) => Err(format!("{v} is not a finite number")),
        NumberExpr::Dist(d) => {
            let d = dist(d)?;
            d.check_number()?;
            Ok(NumExpr::Dist(d))
        }
    }
}

/// A number expression that counts something: a constant must not be negative (a
/// distribution's draws are clamped where they are used).
pub fn count_expr(e: &NumberExpr) -> Result<NumExpr, String> {
    match e {
        NumberExpr::Const(v) if *v < 0.0 => Err(format!("{v} is negative; give 0 or more")),
        other => num_expr(other),
    }
}

/// Converts a distribution object.
pub fn dist(d: &Distribution) -> Result<Dist, String> {
    match d {
        Distribution::Uniform(p) => Dist::uniform(p.min, p.max),
        Distribution::Normal(p) => Dist::normal(p.mean, p.std_dev),
        Distribution::Beta(p) => Dist::beta(p.alpha, p.beta),
        Distribution::Zipf(p) => Dist::zipf(p.n, p.s, p.scrambled),
        Distribution::Exponential(p) => Dist::exponential(p.lambda),
        Distribution::LogNormal(p) => Dist::log_normal(p.mean, p.std_dev),
        Distribution::Poisson(p) => Dist::poisson(p.lambda),
        Distribution::Weibull(p) => Dist::weibull(p.scale, p.shape),
        Distribution::Pareto(p) => Dist::pareto(p.scale, p.shape),
        Distribution::Latest(p) => Dist::latest(p.s),
        Distribution::Histogram(p) => Dist::histogram(&p.bounds, &p.weights),
        Distribution::GeneralizedPareto(p) => Dist::generalized_pareto(p.k, p.sigma, p.theta, p.min, p.max),
        Distribution::TwoTermExp(p) => Dist::two_term_exp(KeyRangeParams {
            ranges: p.ranges,
            a: p.a,
            b: p.b,
            c: p.c,
            d: p.d,
            key_a: p.key_a.unwrap_or(0.0),
            key_b: p.key_b.unwrap_or(0.0),
        }),
    }
}

/// Fields every operation of a group sees, after inheritance.
struct Scope {
    cs: Option<CharacterSet>,
    key: Option<(StringExpr, String)>,
    val: Option<(StringExpr, String)>,
    selection: Option<(Distribution, String)>,
    lifetime: Option<NumExpr>,
}

impl Scope {
    fn top(cs: Option<CharacterSet>) -> Scope {
        Scope {
            cs,
            key: None,
            val: None,
            selection: None,
            lifetime: None,
        }
    }

    /// This scope overridden by a level's own fields.
    fn under(&self, own: &Inherited, path: &str) -> Result<Scope, String> {
        Ok(Scope {
            cs: own.character_set.or(self.cs),
            key: pick_str(&own.key, &own.key_len, path, "key")?.or_else(|| self.key.clone()),
            val: pick_str(&own.val, &own.val_len, path, "val")?.or_else(|| self.val.clone()),
            selection: own
                .selection
                .clone()
                .map(|d| (d, format!("{path}.selection")))
                .or_else(|| self.selection.clone()),
            // Checked where it is written, so a bad value names that path even when no
            // insert inherits it.
            lifetime: match &own.lifetime {
                Some(e) => Some(lifetime_expr(e, &format!("{path}.lifetime"))?),
                None => self.lifetime.clone(),
            },
        })
    }
}

/// `key` or `key_len` (as a uniform string of that length), not both.
fn pick_str(
    expr: &Option<StringExpr>,
    len: &Option<NumberExpr>,
    path: &str,
    name: &str,
) -> Result<Option<(StringExpr, String)>, String> {
    match (expr, len) {
        (Some(_), Some(_)) => Err(format!("{path}: give {name} or {name}_len, not both")),
        (Some(e), None) => Ok(Some((e.clone(), format!("{path}.{name}")))),
        (None, Some(l)) => Ok(Some((
            StringExpr::Uniform(UniformStr {
                len: l.clone(),
                character_set: None,
            }),
            format!("{path}.{name}_len"),
        ))),
        (None, None) => Ok(None),
    }
}

/// Builds the plan of a parsed spec; `default_name` names it when the spec does not.
pub fn build(spec: &SpecFile, default_name: &str) -> Result<Plan, String> {
    build_scaled(spec, default_name, &[])
}

/// Like [`build`], with the operation counts of phase i (groups in order) multiplied
/// by `scales[i]` (1 for phases past the end), rounded, at least 1 where the spec
/// gives at least 1.
pub fn build_scaled(spec: &SpecFile, default_name: &str, scales: &[f64]) -> Result<Plan, String> {
    let compression_ratio = spec.compression_ratio.unwrap_or(1.0);
    if !(compression_ratio > 0.0 && compression_ratio <= 1.0) {
        return Err(format!(
            "compression_ratio: give a fraction in (0, 1] (1 = incompressible), got {compression_ratio}"
        ));
    }
    if spec.sections.is_empty() {
        return Err("sections: the spec has no sections".into());
    }
    let top = Scope::top(spec.character_set);
    let mut sections = Vec::new();
    let mut phase = 0usize;
    for (si, sec) in spec.sections.iter().enumerate() {
        let path = format!("sections[{si}]");
        let scope = top.under(&sec.inherited(), &path)?;
        if sec.groups.is_empty() {
            return Err(format!("{path}.groups: the section has no groups"));
        }
        let label = sec.name.clone().unwrap_or_else(|| format!("section{si}"));
        let mut plan = SectionPlan {
            path: path.clone(),
            key: None,
            groups: Vec::new(),
            ordered: false,
            hot_classes: false,
            inserts: 0,
            lifetimes: false,
        };
        for (gi, g) in sec.groups.iter().enumerate() {
            let gpath = format!("{path}.groups[{gi}]");
            let gscope = scope.under(&g.inherited(), &gpath)?;
            let name = g.name.clone().unwrap_or_else(|| format!("{label}/group{gi}"));
            let scale = scales.get(phase).copied().unwrap_or(1.0);
            phase += 1;
            plan.groups.push(group(g, &gscope, &gpath, name, scale)?);
        }
        super::section::resolve(&mut plan)?;
        plan.lifetimes = plan.groups.iter().flat_map(|g| &g.ops).any(|o| o.lifetime.is_some());
        sections.push(plan);
    }
    dedup_names(&mut sections, spec);
    let epochs = spec.epochs.as_ref().map(|e| epochs(e, phase)).transpose()?;
    Ok(Plan {
        name: spec.name.clone().unwrap_or_else(|| default_name.to_string()),
        epochs,
        compression_ratio,
        sections,
    })
}

/// Named groups that collide across sections get their section's label in front.
fn dedup_names(sections: &mut [SectionPlan], spec: &SpecFile) {
    let all: Vec<String> = sections
        .iter()
        .flat_map(|s| s.groups.iter().map(|g| g.name.clone()))
        .collect();
    for (si, sec) in sections.iter_mut().enumerate() {
        let label = spec.sections[si].name.clone().unwrap_or_else(|| format!("section{si}"));
        for g in &mut sec.groups {
            if all.iter().filter(|n| **n == g.name).count() > 1 && !g.name.starts_with(&format!("{label}/")) {
                g.name = format!("{label}/{}", g.name);
            }
        }
    }
}

/// An operation's own key or value expression (with where it was written) and its
/// own character set.
type OwnExpr = Option<(StringExpr, String)>;

/// Builds the operations of one group, one builder per operation kind: each reads
/// its kind's own fields and inherits the rest from the group's scope.
struct OpBuilder<'a> {
    scope: &'a Scope,
    /// The group's JSON path.
    path: &'a str,
    /// Factor on every operation count.
    scale: f64,
}

impl OpBuilder<'_> {
    /// `inserts`: a key expression (required) and a value, and a key lifetime.
    fn inserts(&self, o: &InsertsSpec) -> Result<OpPlan, String> {
        let mut op = self.op(SpecOp::Insert, &o.op_count, None, None)?;
        let p = format!("{}.inserts", self.path);
        op.lifetime = match &o.lifetime {
            Some(e) => Some(lifetime_expr(e, &format!("{p}.lifetime"))?),
            None => self.scope.lifetime.clone(),
        };
        let key = pick_str(&o.key, &o.key_len, &p, "key")?;
        let val = pick_str(&o.val, &o.val_len, &p, "val")?;
        self.key(&mut op, key, o.character_set)?;
        self.val(&mut op, val, o.character_set)?;
        Ok(op)
    }

    /// `updates`, `merges` and `read_modify_writes`: live keys, and a value.
    fn writes(&self, kind: SpecOp, o: &WriteSpec) -> Result<OpPlan, String> {
        let mut op = self.op(kind, &o.op_count, o.selection.as_ref(), o.hot_probability)?;
        let p = format!("{}.{}", self.path, kind.field());
        let val = pick_str(&o.val, &o.val_len, &p, "val")?;
        self.val(&mut op, val, o.character_set)?;
        Ok(op)
    }

    /// `extends`: live keys, and `len` bytes to append (the default extend length).
    fn extends(&self, o: &ExtendsSpec) -> Result<OpPlan, String> {
        let mut op = self.op(SpecOp::Extend, &o.op_count, o.selection.as_ref(), o.hot_probability)?;
        let p = format!("{}.extends", self.path);
        let (len, len_path) = match &o.len {
            Some(l) => (l.clone(), format!("{p}.len")),
            None => (NumberExpr::Const(DEFAULT_EXTEND_BYTES as f64), p.clone()),
        };
        let val = StringExpr::Uniform(UniformStr {
            len,
            character_set: None,
        });
        self.val(&mut op, Some((val, len_path)), o.character_set)?;
        Ok(op)
    }

    /// `point_queries` and `point_deletes`: live keys only.
    fn points(&self, kind: SpecOp, o: &PointSpec) -> Result<OpPlan, String> {
        self.op(kind, &o.op_count, o.selection.as_ref(), o.hot_probability)
    }

    /// `empty_point_queries` and `empty_point_deletes`: keys from a key expression,
    /// when one is given here or inherited.
    fn empties(&self, kind: SpecOp, o: &EmptySpec) -> Result<OpPlan, String> {
        let mut op = self.op(kind, &o.op_count, None, None)?;
        let p = format!("{}.{}", self.path, kind.field());
        let key = pick_str(&o.key, &o.key_len, &p, "key")?;
        self.key(&mut op, key, o.character_set)?;
        Ok(op)
    }

    /// `range_queries` and `range_deletes`: live start keys, and a range size given
    /// as a selectivity or a scan length.
    fn ranges(&self, kind: SpecOp, o: &RangeSpec) -> Result<OpPlan, String> {
        let mut op = self.op(kind, &o.op_count, o.selection.as_ref(), o.hot_probability)?;
        let p = op.path.clone();
        op.format = o.range_format.unwrap_or(RangeFormat::StartCount);
        op.range = Some(match (&o.selectivity, &o.scan_length) {
            (Some(_), Some(_)) => return Err(format!("{p}: give selectivity or scan_length, not both")),
            (None, None) => {
                return Err(format!(
                    "{p}: give selectivity (a fraction of the live keys) or scan_length"
                ));
            }
            (Some(s), None) => {
                let e = num_expr(s).map_err(|m| format!("{p}.selectivity: {m}"))?;
                if let NumExpr::Const(v) = e
                    && !(0.0..=1.0).contains(&v)
                {
                    return Err(format!("{p}.selectivity: give a fraction in [0, 1], got {v}"));
                }
                RangeSize::Selectivity(e)
            }
            (None, Some(n)) => RangeSize::ScanLength(count_expr(n).map_err(|m| format!("{p}.scan_length: {m}"))?),
        });
        Ok(op)
    }

    /// What every kind has: its scaled count, its selection (its own or the scope's,
    /// kept only by kinds that pick live keys) and its hot probability.
    fn op(
        &self,
        kind: SpecOp,
        count: &NumberExpr,
        sel: Option<&Distribution>,
        hot: Option<f64>,
    ) -> Result<OpPlan, String> {
        let opath = format!("{}.{}", self.path, kind.field());
        let count = scaled(op_count(count, &format!("{opath}.op_count"))?, self.scale);
        let selection = match (sel, &self.scope.selection) {
            (Some(d), _) => Some(dist(d).map_err(|e| format!("{opath}.selection: {e}"))?),
            (None, Some((d, p))) => Some(dist(d).map_err(|e| format!("{p}: {e}"))?),
            (None, None) => None,
        };
        if let Some(d) = &selection {
            Selector::new(Some(d)).map_err(|e| format!("{opath}.selection: {e}"))?;
        }
        if let Some(p) = hot
            && !(0.0..=1.0).contains(&p)
        {
            return Err(format!(
                "{opath}.hot_probability: give a probability in [0, 1], got {p}"
            ));
        }
        Ok(OpPlan {
            kind,
            count,
            path: opath,
            selection: if kind.needs_live() { selection } else { None },
            hot_probability: hot,
            val: None,
            key: None,
            key_path: String::new(),
            range: None,
            format: RangeFormat::StartCount,
            lifetime: None,
        })
    }

    /// Sets `op`'s key expression: its own or the scope's, compiled to check it.
    /// Inserts need one; other kinds without one draw their keys otherwise.
    fn key(&self, op: &mut OpPlan, own: OwnExpr, cs: Option<CharacterSet>) -> Result<(), String> {
        let cs = cs.or(self.scope.cs).unwrap_or(CharacterSet::Alphanumeric);
        match (op.kind, own.or_else(|| self.scope.key.clone())) {
            (_, Some((e, p))) => {
                Str::compile(&e, cs, 0).map_err(|m| format!("{p}: {m}"))?;
                op.key = Some((e, cs));
                op.key_path = p;
            }
            (SpecOp::Insert, None) => {
                return Err(format!(
                    "{}: inserts need a key expression (key or key_len, here or in the group or section)",
                    op.path
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// Sets `op`'s value expression: its own or the scope's (one is required),
    /// compiled to check it.
    fn val(&self, op: &mut OpPlan, own: OwnExpr, cs: Option<CharacterSet>) -> Result<(), String> {
        let cs = cs.or(self.scope.cs).unwrap_or(CharacterSet::Alphanumeric);
        match own.or_else(|| self.scope.val.clone()) {
            Some((e, p)) => {
                Str::compile(&e, cs, 0).map_err(|m| format!("{p}: {m}"))?;
                op.val = Some((e, cs));
                Ok(())
            }
            None => Err(format!(
                "{}: needs a value expression (val or val_len, here or in the group or section)",
                op.path
            )),
        }
    }
}

fn group(g: &GroupSpec, scope: &Scope, path: &str, name: String, scale: f64) -> Result<GroupPlan, String> {
    let b = OpBuilder { scope, path, scale };
    // In the order of SpecOp, which is the order operations are drawn in.
    let mut ops = Vec::new();
    if let Some(o) = &g.inserts {
        ops.push(b.inserts(o)?);
    }
    for (kind, o) in [
        (SpecOp::Update, &g.updates),
        (SpecOp::Merge, &g.merges),
        (SpecOp::ReadModifyWrite, &g.read_modify_writes),
    ] {
        if let Some(o) = o {
            ops.push(b.writes(kind, o)?);
        }
    }
    if let Some(o) = &g.point_queries {
        ops.push(b.points(SpecOp::PointQuery, o)?);
    }
    if let Some(o) = &g.empty_point_queries {
        ops.push(b.empties(SpecOp::EmptyPointQuery, o)?);
    }
    if let Some(o) = &g.range_queries {
        ops.push(b.ranges(SpecOp::RangeQuery, o)?);
    }
    if let Some(o) = &g.point_deletes {
        ops.push(b.points(SpecOp::PointDelete, o)?);
    }
    if let Some(o) = &g.empty_point_deletes {
        ops.push(b.empties(SpecOp::EmptyPointDelete, o)?);
    }
    if let Some(o) = &g.range_deletes {
        ops.push(b.ranges(SpecOp::RangeDelete, o)?);
    }
    if let Some(o) = &g.extends {
        ops.push(b.extends(o)?);
    }
    debug_assert!(ops.is_sorted_by_key(|o| o.kind as u8));

    let total = ops
        .iter()
        .try_fold(0u64, |acc, o| acc.checked_add(o.count).filter(|&t| t <= MAX_OPS))
        .ok_or_else(|| format!("{path}: more than {MAX_OPS} operations in one group"))?;
    let budget = match g.duration {
        Some(d) if d.is_finite() && d > 0.0 && d <= MAX_DURATION => Budget::Secs(d),
        Some(d) => {
            return Err(format!(
                "{path}.duration: give a positive number of seconds (at most {MAX_DURATION}), got {d}"
            ));
        }
        None => Budget::Ops(total),
    };
    if total == 0 {
        return Err(format!(
            "{path}: the group has no operations (give one of inserts, updates, merges, read_modify_writes, \
             point_queries, empty_point_queries, range_queries, point_deletes, empty_point_deletes, range_deletes, \
             extends with op_count > 0)"
        ));
    }
    let rate = match &g.rate {
        None => None,
        Some(RateSpec::Const(r)) if r.is_finite() && *r > 0.0 => Some(Rate::phase(*r)),
        Some(RateSpec::Const(r)) => {
            return Err(format!(
                "{path}.rate: give a positive number of operations per second, got {r}"
            ));
        }
        Some(RateSpec::Sine(w)) => Some(
            Wave::new(w.a, w.b, w.c.unwrap_or(0.0), w.d, w.interval)
                .map_err(|m| format!("{path}.rate.{m}"))?
                .rate(),
        ),
    };
    let sorted = match &g.sorted {
        None => None,
        Some(s) => {
            if !ops.iter().any(|o| o.kind == SpecOp::Insert) {
                return Err(format!("{path}.sorted: the group has no inserts to sort"));
            }
            let inserts = ops.iter().find(|o| o.kind == SpecOp::Insert).map_or(0, |o| o.count);
            if inserts > MAX_SORTED_INSERTS {
                return Err(format!(
                    "{path}.sorted: a sorted group orders its inserts in memory before the first one; give at most \
                     {MAX_SORTED_INSERTS} inserts (got {inserts})"
                ));
            }
            let k = count_expr(&s.k).map_err(|m| format!("{path}.sorted.k: {m}"))?;
            let l = count_expr(&s.l).map_err(|m| format!("{path}.sorted.l: {m}"))?;
            Some((k, l))
        }
    };
    Ok(GroupPlan {
        name,
        path: path.to_string(),
        budget,
        rate,
        ops,
        sorted,
    })
}

/// The `epochs` block of a spec with `phases` groups: checked, each error naming its
/// JSON path.
fn epochs(e: &EpochsSpec, phases: usize) -> Result<EpochDefaults, String> {
    if e.count == 0 {
        return Err("epochs.count: give at least 1 epoch".to_string());
    }
    if phases < 2 {
        return Err(
            "epochs: a spec with epochs needs a group that loads the store and a last group to run in each \
             epoch (it has one group)"
                .to_string(),
        );
    }
    let mut out = EpochDefaults {
        count: Some(e.count),
        ..EpochDefaults::default()
    };
    if let Some(x) = &e.extends {
        if let Some(c) = &x.op_count {
            let n = op_count(c, "epochs.extends.op_count")?;
            if n == 0 {
                return Err("epochs.extends.op_count: give at least 1 extend per epoch".to_string());
            }
            out.extend_ops = Some(n);
        }
        if let Some(l) = &x.len {
            let len = num_expr(l).map_err(|m| format!("epochs.extends.len: {m}"))?;
            if let NumExpr::Const(v) = len
                && !(v >= 0.0 && v.fract() == 0.0)
            {
                return Err(format!(
                    "epochs.extends.len: give a whole number of bytes >= 0, got {v}"
                ));
            }
            out.extend_len = Some(len);
        }
        if let Some(d) = &x.selection {
            let d = dist(d).map_err(|m| format!("epochs.extends.selection: {m}"))?;
            Selector::new(Some(&d)).map_err(|m| format!("epochs.extends.selection: {m}"))?;
            out.extend_selection = Some(Some(d));
        }
    }
    if let Some(modes) = &e.modes {
        out.modes = Some(EpochMode::parse_list(modes).map_err(|m| format!("epochs.modes: {m}"))?);
    }
    Ok(out)
}

/// An operation count: a constant, or a distribution drawn once (with a seed fixed by
/// the path, so every run of the spec uses the same counts).
fn op_count(e: &NumberExpr, path: &str) -> Result<u64, String> {
    let e = num_expr(e).map_err(|m| format!("{path}: {m}"))?;
    if let NumExpr::Const(v) = e
        && (v < 0.0 || v.fract() != 0.0)
    {
        return Err(format!("{path}: give a whole number of operations >= 0, got {v}"));
    }
    let seed = path.bytes().fold(0u64, |h, b| mix64(h ^ u64::from(b)));
    Ok(e.sample_count(&mut Xoshiro256PlusPlus::seed_from_u64(seed)))
}
