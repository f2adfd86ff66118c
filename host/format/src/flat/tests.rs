use std::io::Cursor;

use super::*;

/// A 300 KiB "file" with data regions and never-written holes.
fn original() -> (Vec<u8>, Vec<(u64, usize)>) {
    let mut file = vec![0u8; 300 << 10];
    let mut pieces = Vec::new();
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut at = 0usize;
    while at < file.len() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = 1 + (x % 20_000) as usize;
        let len = len.min(file.len() - at);
        if !x.is_multiple_of(5) {
            for (i, b) in file[at..at + len].iter_mut().enumerate() {
                *b = (x >> (i % 56)) as u8 | 1;
            }
            pieces.push((at as u64, len));
        }
        at += len + (x % 3000) as usize;
    }
    // The file's length is the end of its last written piece.
    let (last_off, last_len) = *pieces.last().unwrap();
    file.truncate(last_off as usize + last_len);
    (file, pieces)
}

fn flatten(file: &[u8], order: &[(u64, usize)]) -> Vec<u8> {
    let mut w = FlatWriter::new(Vec::new()).unwrap();
    for &(off, len) in order {
        w.write_at(off, &file[off as usize..off as usize + len]).unwrap();
    }
    w.write_at(7, &[]).unwrap(); // ignored, never a zero-length record
    w.finish().unwrap()
}

#[test]
fn round_trip_out_of_order() {
    let (file, mut pieces) = original();
    assert!(pieces.len() > 10);
    // Reverse, then interleave: records in no particular offset order.
    pieces.reverse();
    let (even, odd): (Vec<_>, Vec<_>) = pieces.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let order: Vec<_> = odd.into_iter().chain(even).map(|(_, p)| *p).collect();
    let stream = flatten(&file, &order);
    assert_eq!(&stream[..12], b"makedumpfile");
    assert_eq!(&stream[stream.len() - 16..], &[0xff; 16]);
    let mut out = Cursor::new(Vec::new());
    let stats = rearrange(&mut stream.as_slice(), &mut out).unwrap();
    assert_eq!(stats.records, order.len() as u64);
    assert_eq!(stats.end, file.len() as u64);
    assert_eq!(out.into_inner(), file);
}

#[test]
fn later_record_wins() {
    let mut w = FlatWriter::new(Vec::new()).unwrap();
    w.write_at(4096, b"first copy of the sub header").unwrap();
    w.write_at(0, b"HDR").unwrap();
    w.write_at(4096, b"SECOND").unwrap();
    let stream = w.finish().unwrap();
    let mut out = Cursor::new(Vec::new());
    rearrange(&mut stream.as_slice(), &mut out).unwrap();
    let out = out.into_inner();
    assert_eq!(&out[..3], b"HDR");
    assert_eq!(&out[4096..4096 + 28], b"SECONDcopy of the sub header");
}

fn expect_error(stream: &[u8], position: u64, needle: &str) {
    let mut out = Cursor::new(Vec::new());
    match rearrange(&mut &stream[..], &mut out) {
        Err(FormatError::BadFlattened { position: p, reason }) => {
            assert_eq!(p, position, "{reason}");
            assert!(reason.contains(needle), "{reason:?} lacks {needle:?}");
        }
        other => panic!("expected BadFlattened at {position:#x}, got {other:?}"),
    }
}

#[test]
fn refuses_bad_streams_naming_the_position() {
    let mut s = stream_header();
    s[0] = b'M';
    expect_error(&s, 0, "signature");
    expect_error(&stream_header()[..100], 0, "stream ends after 100");
    expect_error(&[], 0, "empty input");

    let mut s = stream_header();
    s[23] = 2;
    expect_error(&s, 16, "type 2");

    let mut s = stream_header();
    s.extend(RecordHeader { offset: 0, size: 4 }.encode());
    s.extend(b"abcd");
    expect_error(&s, 4096 + 20, "without the end marker");

    let mut zero = stream_header();
    zero.extend(RecordHeader { offset: 8192, size: 0 }.encode());
    zero.extend(RecordHeader::END.encode());
    expect_error(&zero, 4096, "zero-length record for offset 0x2000");

    let mut neg = stream_header();
    neg.extend(RecordHeader { offset: -5, size: 3 }.encode());
    expect_error(&neg, 4096, "invalid record header");

    let mut short = stream_header();
    short.extend(RecordHeader { offset: 0, size: 100 }.encode());
    short.extend([1u8; 40]);
    expect_error(&short, 4096 + 16, "stream ends");

    let mut partial_header = stream_header();
    partial_header.extend([0u8; 5]);
    expect_error(&partial_header, 4096, "stream ends after 5 of 16");
}

#[test]
fn record_header_is_big_endian() {
    let h = RecordHeader { offset: 0x0102, size: 0x10 };
    let b = h.encode();
    assert_eq!(b[6..8], [1, 2]);
    assert_eq!(b[15], 0x10);
    assert_eq!(RecordHeader::decode(&b), h);
    assert!(RecordHeader::decode(&[0xff; 16]).is_end());
    let hdr = stream_header();
    assert_eq!(hdr.len(), 4096);
    assert_eq!(hdr[23], 1);
    assert_eq!(hdr[31], 1);
}
