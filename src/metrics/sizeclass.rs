//! Value-size classes (`--size-classes`): each operation kind's latency split by the
//! value bytes its calls moved, beside the kind's whole histogram (YCSB's request for
//! metrics by value size, brianfrankcooper/YCSB#1511).
//!
//! Bounds 256,4096,65536 make four classes: `<=256`, `<=4096` (257 to 4096 bytes),
//! `<=65536` and `>65536`. A call's size is its value's length for put; what it found
//! for get; the appended bytes for append; the mean value length per key for mput,
//! and per key found for mget. Calls without a value (del, range, scan, mdel,
//! delete_range, expiry deletes, connects, and reads that found nothing) are in no
//! class: their kind's row counts them, no class row does.

use super::OpKind;

/// Most bounds `--size-classes` takes (classes are one more).
pub const MAX_BOUNDS: usize = 15;

/// The classes' upper bounds, in ascending order; the last class is open above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeClasses {
    bounds: Vec<u64>,
}

impl SizeClasses {
    /// Classes from their upper bounds in bytes: at least one, at most
    /// [`MAX_BOUNDS`], strictly ascending.
    pub fn new(bounds: Vec<u64>) -> Result<Self, String> {
        if bounds.is_empty() {
            return Err("give at least one bound in bytes, e.g. 256,4096,65536".into());
        }
        if bounds.len() > MAX_BOUNDS {
            return Err(format!(
                "{} bounds make {} classes; at most {MAX_BOUNDS} bounds are taken",
                bounds.len(),
                bounds.len() + 1
            ));
        }
        if let Some(w) = bounds.windows(2).find(|w| w[0] >= w[1]) {
            return Err(format!("bounds must rise strictly: {} is followed by {}", w[0], w[1]));
        }
        Ok(SizeClasses { bounds })
    }

    /// The upper bounds, ascending.
    pub fn bounds(&self) -> &[u64] {
        &self.bounds
    }

    /// Number of classes: one more than the bounds.
    pub fn len(&self) -> usize {
        self.bounds.len() + 1
    }

    /// Never true: a [`SizeClasses`] has at least two classes.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The class of a call that moved `bytes` value bytes: the first whose bound is
    /// at least `bytes`, or the last (open) class.
    #[inline]
    pub fn class_of(&self, bytes: u64) -> usize {
        self.bounds.partition_point(|&b| b < bytes)
    }

    /// The smallest and largest value size of `class` (None: no upper bound).
    pub fn range(&self, class: usize) -> (u64, Option<u64>) {
        let min = if class == 0 { 0 } else { self.bounds[class - 1] + 1 };
        (min, self.bounds.get(class).copied())
    }

    /// The class's name in reports: `<=4096`, or `>65536` for the open class.
    pub fn name(&self, class: usize) -> String {
        match self.bounds.get(class) {
            Some(b) => format!("<={b}"),
            None => format!(">{}", self.bounds[self.bounds.len() - 1]),
        }
    }

    /// The row label of `kind` in `class`, as every report writes it: `put<=4096`.
    pub fn label(&self, kind: OpKind, class: usize) -> String {
        format!("{}{}", kind.name(), self.name(class))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_fall_in_the_first_class_whose_bound_holds_them() {
        let c = SizeClasses::new(vec![256, 4096, 65536]).unwrap();
        assert_eq!(c.bounds(), &[256, 4096, 65536]);
        assert_eq!(c.len(), 4);
        let classes: Vec<usize> = [0, 1, 256, 257, 4096, 4097, 65536, 65537, u64::MAX]
            .into_iter()
            .map(|b| c.class_of(b))
            .collect();
        assert_eq!(classes, vec![0, 0, 0, 1, 1, 2, 2, 3, 3]);
        let names: Vec<String> = (0..c.len()).map(|i| c.name(i)).collect();
        assert_eq!(names, vec!["<=256", "<=4096", "<=65536", ">65536"]);
        assert_eq!(c.range(1), (257, Some(4096)));
        assert_eq!(c.range(3), (65537, None));
        assert_eq!(c.label(OpKind::Put, 1), "put<=4096");
    }
}
