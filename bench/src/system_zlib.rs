//! The system zlib called directly: the baseline of the C plugin in the ABI
//! benchmark. It is the one `unsafe` outside the plugin boundary and the
//! mmap window, in a crate that is never shipped: a safe wrapper (flate2's
//! C backend) would switch the whole workspace off zlib-rs through feature
//! unification (dependencies.md §6.2).
#![allow(unsafe_code)]

use std::mem::MaybeUninit;

use libz_sys as z;

/// One deflate stream, reset per page, as the C plugin does.
pub struct Deflate {
    stream: Box<z::z_stream>,
}

impl Deflate {
    /// A stream at `level` with zlib's default window and memory level.
    ///
    /// # Panics
    /// When zlib cannot set up the stream.
    pub fn new(level: i32) -> Self {
        let mut stream = Box::new(MaybeUninit::<z::z_stream>::zeroed());
        // SAFETY: zlib takes a zeroed z_stream (null zalloc/zfree select its
        // own allocator) and initialises every field, the allocator
        // callbacks included, before returning Z_OK. The box keeps the
        // address zlib records inside the stream.
        let rc = unsafe {
            z::deflateInit_(stream.as_mut_ptr(), level, z::zlibVersion(), size_of::<z::z_stream>() as i32)
        };
        assert_eq!(rc, z::Z_OK, "deflateInit failed");
        // SAFETY: deflateInit_ returned Z_OK, so every field is initialised.
        let stream = unsafe { Box::from_raw(Box::into_raw(stream).cast::<z::z_stream>()) };
        Self { stream }
    }

    /// Compresses one page into `dst`; returns the bytes written.
    ///
    /// # Panics
    /// When `dst` is too small or zlib fails.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> usize {
        let s = &mut *self.stream;
        // SAFETY: an initialised stream; the pointers are valid for the
        // lengths given for the duration of the deflate call.
        unsafe {
            assert_eq!(z::deflateReset(s), z::Z_OK);
            s.next_in = src.as_ptr().cast_mut();
            s.avail_in = src.len() as u32;
            s.next_out = dst.as_mut_ptr();
            s.avail_out = dst.len() as u32;
            assert_eq!(z::deflate(s, z::Z_FINISH), z::Z_STREAM_END, "deflate did not finish");
        }
        s.total_out as usize
    }
}

impl Drop for Deflate {
    fn drop(&mut self) {
        // SAFETY: the stream was initialised by deflateInit_ and ends once.
        unsafe { z::deflateEnd(&mut *self.stream) };
    }
}
