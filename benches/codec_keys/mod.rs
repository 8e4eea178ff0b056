//! What the protocol-codec benches share, so that each renders the same keys.

/// The key of request `i`: `key:` and 12 digits.
pub fn request_key(i: u64, out: &mut [u8; 16]) {
    out[..4].copy_from_slice(b"key:");
    let mut n = i;
    for d in out[4..].iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
}
