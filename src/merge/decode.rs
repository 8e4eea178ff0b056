//! Adding a histogram log's interval into histograms without building a histogram
//! for it.
//!
//! An interval is the base64 of a histogram's V2 deflate encoding: a zlib stream of a
//! small header and the counts array run-length encoded (ZigZag LEB128 numbers, a
//! negative one a run of empty buckets). The crate's `Deserializer` returns a new
//! full-size histogram for every interval (about 270 KB allocated and zeroed for
//! 1 ns to 1 h at 3 digits), and has no way to decode into an existing one; a merge
//! of 16 one-hour segments decodes 230,400 of them. [`Decoder`] keeps its buffers and
//! its zlib state, decodes only the non-zero counts, and records each at its
//! bucket's value, which is what `Histogram::add` does for histograms of another
//! layout: the result is exactly that of deserializing and adding (see the tests).

use base64::Engine as _;
use flate2::{Decompress, FlushDecompress, Status};

use super::counts::Counts;
use crate::metrics::{HIST_MAX_NS, HIST_SIGFIG, Histogram, new_histogram};
use crate::report::encode::{COMPRESSED_COOKIE, PLAIN_COOKIE};

/// The plain encoding's header: cookie, payload length, normalizing offset, digits,
/// lowest and highest trackable value, integer-to-double ratio.
const HEADER: usize = 4 + 4 + 4 + 4 + 8 + 8 + 8;

/// The histogram layout an encoding names: (lowest, highest, significant digits).
type Layout = (u64, u64, u8);

/// Where a bucket of kvmark's layout has no room for a value (see [`Bucket::at`]).
const NO_ROOM: u32 = u32::MAX;

/// One bucket of an encoding's layout.
#[derive(Clone, Copy)]
struct Bucket {
    /// Its lowest value.
    value: u64,
    /// The index of the bucket holding `value` in a histogram of kvmark's layout
    /// ([`crate::metrics::new_histogram`]), or [`NO_ROOM`].
    at: u32,
}

/// Decodes intervals one at a time into reused buffers.
pub struct Decoder {
    raw: Vec<u8>,
    plain: Vec<u8>,
    inflate: Decompress,
    /// The last interval's non-zero buckets with their counts.
    counts: Vec<(Bucket, u64)>,
    /// Per layout seen, its buckets by counts index.
    layouts: Vec<(Layout, Vec<Bucket>)>,
    /// Each bucket's lowest value in kvmark's layout, by counts index.
    ours: Vec<u64>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            raw: Vec::new(),
            plain: Vec::new(),
            inflate: Decompress::new(true),
            counts: Vec::new(),
            layouts: Vec::new(),
            ours: Vec::new(),
        }
    }
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// One LEB128 number as hdrhistogram writes them: 7 bits a byte, the ninth byte whole.
fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..9 {
        let byte = *b.get(*at)?;
        *at += 1;
        if i == 8 {
            return Some(v | u64::from(byte) << 56);
        }
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            break;
        }
    }
    Some(v)
}

impl Decoder {
    /// Decodes `encoded` (one interval's histogram field); returns its total count.
    /// Its buckets stay for [`Decoder::add_to`] until the next call.
    pub fn decode(&mut self, encoded: &str) -> Result<u64, String> {
        self.counts.clear();
        self.raw.clear();
        base64::engine::general_purpose::STANDARD
            .decode_vec(encoded, &mut self.raw)
            .map_err(|e| format!("the histogram is not base64: {e}"))?;
        self.inflate()?;
        let p = &self.plain;
        if p.len() < HEADER || be32(p, 0) != PLAIN_COOKIE {
            return Err("the histogram's inner encoding is not HdrHistogram V2".to_string());
        }
        let len = be32(p, 4) as usize;
        if be32(p, 8) != 0 || f64::from_bits(be64(p, 32)) != 1.0 {
            return Err("the histogram uses an encoding feature hdrhistogram does not support".to_string());
        }
        let digits = u8::try_from(be32(p, 12)).map_err(|_| "the histogram's digits are out of range".to_string())?;
        let layout = (be64(p, 16), be64(p, 24), digits);
        let payload = p
            .get(HEADER..HEADER + len)
            .ok_or_else(|| "the histogram's counts are cut short".to_string())?;
        if self.ours.is_empty() {
            self.ours = bucket_values(OURS)?;
        }
        let buckets = match self.layouts.iter().position(|(l, _)| *l == layout) {
            Some(i) => &self.layouts[i].1,
            None => {
                self.layouts.push((layout, buckets(layout, &self.ours)?));
                &self.layouts.last().expect("just pushed").1
            }
        };
        let (mut at, mut index, mut total) = (0usize, 0usize, 0u64);
        while at < payload.len() {
            let zz = varint(payload, &mut at).ok_or_else(|| "the histogram's counts are cut short".to_string())?;
            let n = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
            if n < 0 {
                index = index.saturating_add(n.unsigned_abs() as usize);
                continue;
            }
            if n > 0 {
                let bucket = *buckets
                    .get(index)
                    .ok_or_else(|| "the histogram has more buckets than its range holds".to_string())?;
                self.counts.push((bucket, n as u64));
                total += n as u64;
            }
            index += 1;
        }
        Ok(total)
    }

    /// The last decoded interval's non-zero buckets: (lowest value, count).
    pub fn values(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts.iter().map(|(b, n)| (b.value, *n))
    }

    /// Adds the last decoded interval into `into`.
    pub fn add_to(&self, into: &mut Histogram) -> Result<(), String> {
        for &(b, count) in &self.counts {
            into.record_n(b.value, count)
                .map_err(|e| format!("a histogram value {} does not fit: {e:?}", b.value))?;
        }
        Ok(())
    }

    /// Adds the last decoded interval into `into`, as [`Decoder::add_to`] adds it into
    /// a histogram of kvmark's layout.
    pub(super) fn add_to_counts(&self, into: &mut Counts) -> Result<(), String> {
        for &(b, count) in &self.counts {
            if b.at == NO_ROOM {
                return Err(format!(
                    "a histogram value {} does not fit: it is above kvmark's largest, {HIST_MAX_NS} ns",
                    b.value
                ));
            }
            into.add(b.at, count);
        }
        Ok(())
    }

    /// Each bucket's lowest value in kvmark's layout, by counts index (empty before
    /// the first interval).
    pub(super) fn our_values(&self) -> &[u64] {
        &self.ours
    }

    /// Inflates `raw` (the compressed encoding) into `plain`.
    fn inflate(&mut self) -> Result<(), String> {
        let raw = &self.raw;
        if raw.len() < 8 || be32(raw, 0) != COMPRESSED_COOKIE {
            return Err("not a compressed HdrHistogram V2 encoding".to_string());
        }
        let input = raw
            .get(8..8 + be32(raw, 4) as usize)
            .ok_or_else(|| "the histogram's compressed data is cut short".to_string())?;
        self.inflate.reset(true);
        self.plain.clear();
        // Room for a typical interval at once; more as the stream asks for it.
        self.plain.reserve(input.len() * 4 + 256);
        loop {
            if self.plain.len() == self.plain.capacity() {
                self.plain.reserve(self.plain.capacity());
            }
            let used = self.inflate.total_in() as usize;
            let before = (used, self.plain.len());
            let status = self
                .inflate
                .decompress_vec(&input[used..], &mut self.plain, FlushDecompress::None)
                .map_err(|e| format!("the histogram's compressed data is damaged: {e}"))?;
            if status == Status::StreamEnd {
                return Ok(());
            }
            if before == (self.inflate.total_in() as usize, self.plain.len())
                && self.plain.len() < self.plain.capacity()
            {
                return Err("the histogram's compressed data is cut short".to_string());
            }
        }
    }
}

/// kvmark's layout ([`crate::metrics::new_histogram`]).
const OURS: Layout = (1, HIST_MAX_NS, HIST_SIGFIG);

/// The buckets of `layout`, each with its place among `ours` (the bucket values of
/// kvmark's layout, ascending).
fn buckets(layout: Layout, ours: &[u64]) -> Result<Vec<Bucket>, String> {
    let values = bucket_values(layout)?;
    if layout == OURS {
        return Ok(values
            .into_iter()
            .zip(0..)
            .map(|(value, at)| Bucket { value, at })
            .collect());
    }
    // Values above the top of kvmark's last bucket have no room, as `record_n` says.
    let top = new_histogram().highest_equivalent(*ours.last().expect("buckets"));
    Ok(values
        .into_iter()
        .map(|value| Bucket {
            value,
            at: if value > top {
                NO_ROOM
            } else {
                (ours.partition_point(|&v| v <= value) - 1) as u32
            },
        })
        .collect())
}

/// Each bucket's lowest value, by counts index, of a histogram of `layout`: the
/// buckets are consecutive value ranges, so each starts where the one before ends.
fn bucket_values((low, high, digits): Layout) -> Result<Vec<u64>, String> {
    let h = Histogram::new_with_bounds(low, high, digits)
        .map_err(|e| format!("the histogram's range {low}..{high} at {digits} digits is invalid: {e:?}"))?;
    let mut values = Vec::with_capacity(h.distinct_values());
    let mut v = 0;
    for _ in 0..h.distinct_values() {
        values.push(v);
        v = h.next_non_equivalent(v);
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
    use rand::{RngExt as _, SeedableRng as _};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn encode(h: &Histogram) -> String {
        let mut buf = Vec::new();
        V2DeflateSerializer::new().serialize(h, &mut buf).expect("serializes");
        base64::engine::general_purpose::STANDARD.encode(buf)
    }

    /// A histogram of `layout` with random values over its whole range, many in the
    /// first bucket and at the top.
    fn random(rng: &mut Xoshiro256PlusPlus, layout: Layout) -> Histogram {
        let mut h = Histogram::new_with_bounds(layout.0, layout.1, layout.2).expect("valid");
        for _ in 0..rng.random_range(0..400) {
            let v = match rng.random_range(0..4) {
                0 => rng.random_range(0..3000),
                1 => layout.1 - rng.random_range(0..1000),
                _ => rng.random_range(0..=layout.1) >> rng.random_range(0..40),
            };
            h.record_n(v, rng.random_range(1..1_000_000)).expect("in range");
        }
        h
    }

    #[test]
    fn decoding_into_histograms_equals_deserializing_and_adding() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(19);
        let mut dec = Decoder::default();
        let mut de = Deserializer::new();
        let layouts = [
            (1, crate::metrics::HIST_MAX_NS, crate::metrics::HIST_SIGFIG),
            (1, 10_000_000, 2),
            (1000, 1 << 40, 4),
        ];
        for layout in layouts {
            let (mut ours, mut theirs) = (new_histogram(), new_histogram());
            for _ in 0..50 {
                let src = random(&mut rng, layout);
                let text = encode(&src);
                let n = dec.decode(&text).expect("decodes");
                assert_eq!(n, src.len());
                dec.add_to(&mut ours).expect("adds");
                let raw = base64::engine::general_purpose::STANDARD.decode(&text).expect("base64");
                let h: Histogram = de.deserialize(&mut raw.as_slice()).expect("deserializes");
                theirs.add(&h).expect("adds");
                assert_eq!(ours, theirs, "layout {layout:?}");
                assert_eq!(
                    (ours.min(), ours.max(), ours.len()),
                    (theirs.min(), theirs.max(), theirs.len())
                );
            }
        }
    }

    #[test]
    fn damaged_intervals_are_errors() {
        let mut h = new_histogram();
        h.record_n(1234, 5).expect("in range");
        let good = encode(&h);
        let mut dec = Decoder::default();
        assert_eq!(dec.decode(&good), Ok(5));
        assert!(dec.decode("not base64!").unwrap_err().contains("base64"));
        let raw = base64::engine::general_purpose::STANDARD.decode(&good).expect("base64");
        let short = base64::engine::general_purpose::STANDARD.encode(&raw[..raw.len() - 6]);
        assert!(
            dec.decode(&short).unwrap_err().contains("cut short"),
            "{:?}",
            dec.decode(&short)
        );
        let mut bad = raw.clone();
        bad[0] ^= 1;
        let bad = base64::engine::general_purpose::STANDARD.encode(&bad);
        assert!(dec.decode(&bad).unwrap_err().contains("not a compressed"));
        // The decoder still works after errors.
        assert_eq!(dec.decode(&good), Ok(5));
    }
}
