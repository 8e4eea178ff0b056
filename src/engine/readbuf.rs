//! [`ReadBuf`]: the reusable buffer values read from an engine are copied into.
//!
//! Why not a plain `Vec<u8>`: a Lua workload's `kv.get` copies the value once more,
//! into a new Lua string, whose bytes sit 24 bytes past the start of an allocator
//! block; large allocator blocks start on 1 KiB boundaries, and so does a large
//! `Vec`. The destination then lies a few bytes past the source modulo 4 KiB, and
//! `rep movsb` (glibc's copy for a few KiB and up) on this machine's AMD EPYC runs
//! about 20 times slower in that case (4K aliasing: 1.4 us instead of 70 ns for
//! 4 KiB, measured in docs/benchmarks-history.md, "Engines (issue 4)"). A `ReadBuf` keeps its
//! bytes half a KiB off that grid, so such a copy never lands just past its source.

use std::fmt;
use std::ops::Deref;

/// The grid large allocator blocks start on.
const GRID: usize = 1024;
/// Where, modulo [`GRID`], the buffer's bytes start: half a grid away from a Lua
/// string's bytes (24 bytes past a block's start), in both directions.
const PLACE: usize = 24 + GRID / 2;

/// A reusable byte buffer whose bytes start at a chosen offset from the allocator's
/// 1 KiB grid (see the module documentation). It only grows; `clear` keeps its
/// memory, so a worker's reads allocate nothing once it has seen its largest value.
#[derive(Default)]
pub struct ReadBuf {
    /// Backing memory; the bytes are `mem[start..start + len]`.
    mem: Vec<u8>,
    start: usize,
    len: usize,
}

impl ReadBuf {
    /// An empty buffer (allocates on first use).
    pub const fn new() -> Self {
        ReadBuf {
            mem: Vec::new(),
            start: 0,
            len: 0,
        }
    }

    /// Empties the buffer, keeping its memory.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Replaces the contents with `bytes`.
    #[inline]
    pub fn set(&mut self, bytes: &[u8]) {
        self.len = 0;
        self.extend_from_slice(bytes);
    }

    /// Appends `bytes`.
    #[inline]
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if self.start + end > self.mem.len() {
            self.grow(end);
        }
        self.mem[self.start + self.len..self.start + end].copy_from_slice(bytes);
        self.len = end;
    }

    /// Takes `bytes` as the contents without copying them, for a binding that hands
    /// back an owned copy anyway. The buffer's bytes are then wherever that vector's
    /// are, off the chosen placement until the buffer next grows.
    pub fn adopt(&mut self, bytes: Vec<u8>) {
        self.len = bytes.len();
        self.start = 0;
        self.mem = bytes;
    }

    /// Lends the buffer's memory to a library that copies a value into memory it is
    /// given (instead of handing back a copy of its own): empties the buffer and
    /// returns all its room, at least `min` bytes. [`ReadBuf::filled`] then says how
    /// many bytes were written.
    #[inline]
    pub fn room(&mut self, min: usize) -> &mut [u8] {
        self.len = 0;
        if self.start + min > self.mem.len() {
            self.grow(min);
        }
        &mut self.mem[self.start..]
    }

    /// Keeps the first `len` bytes written into [`ReadBuf::room`] as the contents.
    ///
    /// # Panics
    /// When `len` is more than the room lent.
    #[inline]
    pub fn filled(&mut self, len: usize) {
        assert!(self.start + len <= self.mem.len(), "ReadBuf::filled past its room");
        self.len = len;
    }

    /// The bytes held.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.mem[self.start..self.start + self.len]
    }

    /// Moves the contents to new memory of room for at least `need` bytes.
    #[cold]
    fn grow(&mut self, need: usize) {
        let room = need.max(64).next_power_of_two();
        let mut mem = vec![0u8; room + GRID];
        let start = (PLACE + GRID - mem.as_ptr() as usize % GRID) % GRID;
        mem[start..start + self.len].copy_from_slice(self.as_slice());
        self.mem = mem;
        self.start = start;
    }
}

impl Deref for ReadBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl fmt::Debug for ReadBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReadBuf({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_was_written_across_growth() {
        let mut b = ReadBuf::new();
        assert!(b.is_empty());
        b.set(b"abc");
        b.extend_from_slice(&[7u8; 5000]);
        assert_eq!(b.len(), 5003);
        assert_eq!(&b[..3], b"abc");
        assert!(b[3..].iter().all(|&x| x == 7));
        b.set(b"z");
        assert_eq!(b.as_slice(), b"z");
        b.clear();
        assert_eq!(b.as_slice(), b"");
    }

    #[test]
    fn room_lent_to_a_library_keeps_what_it_wrote() {
        let mut b = ReadBuf::new();
        b.set(b"old");
        let room = b.room(10);
        assert!(room.len() >= 10);
        room[..4].copy_from_slice(b"new!");
        b.filled(4);
        assert_eq!(b.as_slice(), b"new!");
        let big = b.room(70_000).len();
        assert!(big >= 70_000);
        b.filled(0);
        assert!(b.is_empty());
        assert_eq!(b.as_ptr() as usize % GRID, PLACE, "room keeps the placement");
    }

    #[test]
    fn bytes_start_off_the_allocator_grid() {
        let mut b = ReadBuf::new();
        for n in [1, 4096, 70_000] {
            b.set(&vec![1u8; n]);
            assert_eq!(b.as_ptr() as usize % GRID, PLACE, "{n} bytes");
        }
    }
}
