//! The one function of liblzo2 this codec calls, `lzo1x_1_compress`
//! (Debian's liblzo2, linked statically by `build.rs`): the encoder makedumpfile
//! `-l` uses, so the output is byte for byte makedumpfile's.

use std::ffi::{c_int, c_uchar, c_ulong, c_void};
use std::mem::MaybeUninit;

/// `LZO1X_1_MEM_COMPRESS`: 16384 dictionary entries of one pointer each.
const WORK_MEMORY: usize = 16384 * size_of::<*const u8>();

/// `LZO_E_OK`.
const OK: c_int = 0;

// SAFETY: the signatures are those of lzo/lzoconf.h and lzo/lzo1x.h of
// liblzo2 2.10 (lzo_uint is unsigned long on Linux, lzo_voidp a void *);
// check_abi asks the library itself to confirm the type sizes.
unsafe extern "C" {
    /// `lzo_init()` expands to this call with the sizes of the caller's types.
    fn __lzo_init_v2(
        version: u32,
        short: c_int,
        int: c_int,
        long: c_int,
        uint32: c_int,
        uint: c_int,
        dict: c_int,
        charp: c_int,
        voidp: c_int,
        callback: c_int,
    ) -> c_int;
    fn lzo1x_1_compress(
        src: *const c_uchar,
        src_len: c_ulong,
        dst: *mut c_uchar,
        dst_len: *mut c_ulong,
        wrkmem: *mut c_void,
    ) -> c_int;
}

/// liblzo2's ABI check: the library agrees on the size of each type, as its
/// `lzo_init()` macro asks (version 2.10's numbering). Called once per
/// context; it only compares numbers.
pub fn check_abi() -> Result<(), String> {
    let ptr = size_of::<*const u8>() as c_int;
    // lzo_callback_t: four pointers and two lzo_xint (size_t).
    let callback = (4 * size_of::<*const u8>() + 2 * size_of::<usize>()) as c_int;
    // SAFETY: a pure function of its integer arguments; no pointer is passed.
    let rc = unsafe {
        __lzo_init_v2(
            0x20a0,
            size_of::<i16>() as c_int,
            size_of::<c_int>() as c_int,
            size_of::<std::ffi::c_long>() as c_int,
            size_of::<u32>() as c_int,
            size_of::<c_ulong>() as c_int,
            ptr,
            ptr,
            ptr,
            callback,
        )
    };
    if rc == OK { Ok(()) } else { Err(format!("liblzo2's lzo_init failed ({rc}): a library of another ABI")) }
}

/// One encoder's dictionary, kept across pages. Left uninitialised: the
/// library clears what it uses at each call before reading it, and on the
/// machines where it loads 32 bits unaligned (x86_64, arm64) that is 16384
/// entries of 16 bits, a quarter of `LZO1X_1_MEM_COMPRESS`; zeroing the
/// rest would make 96 KiB a worker resident that is never read (issue 41:
/// a capture kernel's memory per worker).
pub struct Encoder {
    work: Box<[MaybeUninit<*mut c_void>]>,
}

// SAFETY: the work memory is plain bytes owned by this encoder; the raw
// pointer element type only gives it pointer alignment.
unsafe impl Send for Encoder {}

impl Encoder {
    /// An encoder with its work memory.
    pub fn new() -> Self {
        Self { work: Box::new_uninit_slice(WORK_MEMORY / size_of::<*const u8>()) }
    }

    /// Compresses `src` into `dst`, which must hold `bound(src.len())`
    /// bytes (checked by the caller); returns the length written.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
        assert!(dst.len() >= bound(src.len()), "the caller checks the bound");
        let mut written: c_ulong = 0;
        // SAFETY: src and dst are valid for their lengths for the call, and
        // dst holds liblzo2's documented worst case for src.len() (bound),
        // so the encoder, which does not check its output, cannot overrun;
        // `work` is LZO1X_1_MEM_COMPRESS bytes, pointer-aligned, owned
        // exclusively by this call through &mut self; the library writes
        // (clears) its dictionary before it reads it, so its bytes need no
        // initial value.
        let rc = unsafe {
            lzo1x_1_compress(
                src.as_ptr(),
                src.len() as c_ulong,
                dst.as_mut_ptr(),
                &mut written,
                self.work.as_mut_ptr().cast(),
            )
        };
        if rc == OK { Ok(written as usize) } else { Err(format!("lzo1x_1_compress failed ({rc})")) }
    }
}

/// liblzo2's worst case for LZO1X-1 (4419 for 4 KiB).
pub fn bound(n: usize) -> usize {
    n + n / 16 + 64 + 3
}
