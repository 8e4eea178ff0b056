//! A section's key space and what its operations need of it: one key expression for
//! all its inserts, capacity for them, keys that sort by structure for range deletes,
//! start-end ranges and sorted inserts, a hot prefix for `hot_probability`, live keys
//! for operations that pick one, and checkable absence for empty operations.

use super::keys::KeyCodec;
use super::plan::{SectionPlan, SpecOp};
use super::schema::{CharacterSet, RangeFormat, StringExpr};
use super::strings::Str;

/// Settles the section's key space and checks what its operations need of it.
pub fn resolve(sec: &mut SectionPlan) -> Result<(), String> {
    let mut key: Option<((StringExpr, CharacterSet), String)> = None;
    for g in &sec.groups {
        for o in g.ops.iter().filter(|o| o.kind == SpecOp::Insert) {
            let k = o.key.clone().expect("inserts have keys");
            match &key {
                None => key = Some((k, o.key_path.clone())),
                Some((first, p)) if *first != k => {
                    return Err(format!(
                        "{}: every insert of a section uses one key expression (the section is one key \
                         space; see {p}); put differently shaped keys in another section",
                        o.key_path
                    ));
                }
                Some(_) => {}
            }
        }
    }
    if key.is_none() {
        key = sec
            .groups
            .iter()
            .flat_map(|g| &g.ops)
            .find_map(|o| o.key.clone().map(|k| (k, o.key_path.clone())));
    }
    let codec = match &key {
        Some(((e, cs), p)) => {
            let s = Str::compile(e, *cs, 0).map_err(|m| format!("{p}: {m}"))?;
            Some(KeyCodec::new(s, 0).map_err(|m| format!("{p}: {m}"))?)
        }
        None => None,
    };
    sec.key = key.map(|(k, _)| k);
    let has_inserts = sec.groups.iter().flat_map(|g| &g.ops).any(|o| o.kind == SpecOp::Insert);
    sec.inserts = sec
        .groups
        .iter()
        .flat_map(|g| &g.ops)
        .filter(|o| o.kind == SpecOp::Insert)
        .map(|o| o.count)
        .sum();
    if let Some(c) = &codec
        && sec.inserts > c.capacity()
    {
        return Err(format!(
            "{}: the section inserts {} keys but its key expression has only {} distinct keys",
            sec.path,
            sec.inserts,
            c.capacity()
        ));
    }
    for g in &mut sec.groups {
        if g.sorted.is_some() && codec.as_ref().is_some_and(|c| !c.is_ordered()) {
            return Err(format!(
                "{}.sorted: sorting inserts needs keys that sort by their structure: every part of the key \
                 before its unique `uniform` part must have a fixed width",
                g.path
            ));
        }
        for o in &mut g.ops {
            let p = &o.path;
            let needs_order =
                o.kind == SpecOp::RangeDelete || (o.kind == SpecOp::RangeQuery && o.format == RangeFormat::StartEnd);
            if needs_order {
                if codec.as_ref().is_some_and(|c| !c.is_ordered()) {
                    return Err(format!(
                        "{p}: {} need keys that sort by their structure: every part of the key before its \
                         unique `uniform` part must have a fixed width (and no `weighted` of different widths)",
                        if o.kind == SpecOp::RangeDelete {
                            "range deletes"
                        } else {
                            "StartEnd ranges"
                        }
                    ));
                }
                sec.ordered = true;
            }
            if o.hot_probability.is_some() {
                if !codec.as_ref().is_some_and(KeyCodec::has_hot) {
                    return Err(format!(
                        "{p}.hot_probability: the section's key has no hot_range prefix to prefer"
                    ));
                }
                sec.hot_classes = true;
            }
            if o.kind.needs_live() && !has_inserts {
                return Err(format!(
                    "{p}: the section has no inserts, so there are no live keys to pick"
                ));
            }
            if matches!(o.kind, SpecOp::EmptyPointQuery | SpecOp::EmptyPointDelete) {
                match (&o.key, &sec.key) {
                    (None, None) => {
                        return Err(format!(
                            "{p}: needs a key expression (key or key_len) to make absent keys"
                        ));
                    }
                    (Some(own), Some(section)) if own == section => o.key = None,
                    (None, Some(_)) => {}
                    (Some(_), _) => {
                        if codec.as_ref().is_some_and(|c| !c.is_decodable()) {
                            return Err(format!(
                                "{}: differs from the section's insert key, whose unique part has no fixed \
                                 position, so absence cannot be checked; drop this key to use the insert key's shape",
                                o.key_path
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}
