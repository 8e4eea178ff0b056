//! The interval encoding of the `hdr` sink: HdrHistogram's V2 compressed encoding
//! (a cookie, the zlib stream's length, then zlib of the crate's plain V2 encoding),
//! deflated at zlib's fastest level with one reused zlib state.
//!
//! hdrhistogram's `V2DeflateSerializer` writes the same format at the default level
//! and builds a new zlib state (hundreds of KB) for every histogram: a merge of 16
//! one-hour segments writes 14,400 intervals, and deflating them was a third of its
//! time. The format asks only for a zlib stream, whatever its level, so the crate's
//! `Deserializer`, kvmark's own decoder (`merge::decode`) and HdrHistogram's Java
//! `HistogramLogProcessor` read either alike. The price is size: the merged log of
//! `bench/merge.sh` is 50 MB at the fast level against 33 MB at the default one
//! (docs/benchmarks-history.md, "Merging segments").

use std::io::{self, Write};

use flate2::{Compress, Compression, FlushCompress, Status};
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::{Counter, Histogram};

/// The compressed encoding's cookie (hdrhistogram's `V2_COMPRESSED_COOKIE`, private
/// there): the encoding's version with the 8-byte word size flag.
pub const COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// The plain encoding's cookie (hdrhistogram's `V2_COOKIE`).
pub const PLAIN_COOKIE: u32 = 0x1c84_9303 | 0x10;

/// Encodes histograms one at a time into reused buffers and one zlib state.
pub struct Encoder {
    v2: V2Serializer,
    plain: Vec<u8>,
    packed: Vec<u8>,
    zlib: Compress,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder {
            v2: V2Serializer::new(),
            plain: Vec::new(),
            packed: Vec::new(),
            zlib: Compress::new(Compression::fast(), true),
        }
    }
}

impl Serializer for Encoder {
    type SerializeError = io::Error;

    fn serialize<T: Counter, W: Write>(&mut self, h: &Histogram<T>, writer: &mut W) -> io::Result<usize> {
        self.plain.clear();
        self.v2
            .serialize(h, &mut self.plain)
            .map_err(|e| io::Error::other(format!("cannot encode a histogram: {e}")))?;
        self.packed.clear();
        self.packed.extend_from_slice(&COMPRESSED_COOKIE.to_be_bytes());
        // The zlib stream's length, filled in below.
        self.packed.extend_from_slice(&[0; 4]);
        self.zlib.reset();
        loop {
            // Room for the stream at once in the usual case (counts compress well).
            self.packed.reserve(self.plain.len() / 2 + 64);
            let used = self.zlib.total_in() as usize;
            let status = self
                .zlib
                .compress_vec(&self.plain[used..], &mut self.packed, FlushCompress::Finish)
                .map_err(|e| io::Error::other(format!("cannot deflate a histogram: {e}")))?;
            if status == Status::StreamEnd {
                break;
            }
        }
        let len = u32::try_from(self.packed.len() - 8)
            .map_err(|_| io::Error::other("a histogram's encoding exceeds 4 GiB"))?;
        self.packed[4..8].copy_from_slice(&len.to_be_bytes());
        writer.write_all(&self.packed)?;
        Ok(self.packed.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::new_histogram;
    use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};

    fn encode(s: &mut impl Serializer, h: &Histogram<u64>) -> Vec<u8> {
        let mut out = Vec::new();
        s.serialize(h, &mut out).expect("serializes");
        out
    }

    #[test]
    fn decodes_to_the_same_histogram_as_the_crates_encoding() {
        let mut ours = Encoder::default();
        let mut theirs = V2DeflateSerializer::new();
        let mut de = Deserializer::new();
        let mut h = new_histogram();
        let empty = h.clone();
        let mut wide = Histogram::<u64>::new_with_bounds(1000, 1 << 40, 4).expect("valid");
        let mut v = 1u64;
        // Values over the whole range, some buckets with large counts.
        while v < crate::metrics::HIST_MAX_NS {
            h.record_n(v, v % 1_000_003 + 1).expect("in range");
            wide.record_n(v.clamp(1000, 1 << 40), v % 7 + 1).expect("in range");
            v = v * 9 / 8 + 1;
        }
        // One encoder reused over histograms of different layouts and sizes.
        for hist in [&h, &empty, &wide, &h] {
            let a = encode(&mut ours, hist);
            let b = encode(&mut theirs, hist);
            assert_eq!(&a[..4], &b[..4], "the same cookie");
            let len = u32::from_be_bytes(a[4..8].try_into().unwrap()) as usize;
            assert_eq!(len, a.len() - 8, "the length names the zlib stream");
            let back: Histogram<u64> = de.deserialize(&mut a.as_slice()).expect("the crate decodes ours");
            let orig: Histogram<u64> = de.deserialize(&mut b.as_slice()).expect("the crate decodes its own");
            assert_eq!(&back, hist);
            assert_eq!(back, orig);
            assert_eq!(
                (back.min(), back.max(), back.len()),
                (hist.min(), hist.max(), hist.len())
            );
        }
    }
}
