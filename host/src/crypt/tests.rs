use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use age::secrecy::ExposeSecret;
use vmdump_format::sink::Sink;

use super::*;

/// An OpenSSH public key (age's own test vector).
const SSH_ED25519: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHsKLqeplhpW+uObz5dvMgjz1OxfM/XXUB+VHtZ6isGN alice@rust";

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vmdump-crypt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A new X25519 key: its recipient, and its identity file in `dir`.
fn key(dir: &Path, name: &str) -> (String, PathBuf) {
    let identity = age::x25519::Identity::generate();
    let path = dir.join(name);
    // A secret key, even a test's: its owner alone reads it.
    let mut file = File::options().write(true).create_new(true).mode(0o600).open(&path).unwrap();
    file.write_all(format!("# test key\n{}\n", identity.to_string().expose_secret()).as_bytes()).unwrap();
    (identity.to_public().to_string(), path)
}

/// Positioned writes like a dump's, over several age chunks: a header
/// block at 0 written first and again last, and records of distinct bytes.
fn writes() -> Vec<(u64, Vec<u8>)> {
    let mut list = vec![(0, vec![1u8; 4096])];
    for i in 0..40u64 {
        list.push((8192 + i * 9000, (0..9000).map(|b| (b as u64 * 7 + i) as u8).collect()));
    }
    list.push((0, vec![2u8; 4096]));
    list
}

/// The encryption of [`writes`] to `recipients`, and the plain file they make.
fn encrypted(recipients: &[String]) -> (Vec<u8>, Vec<u8>) {
    let recipients = Recipients::parse(recipients).unwrap();
    let mut out = Vec::new();
    let mut sink = EncryptedSink::new(&recipients, &mut out, None).unwrap();
    let mut plain = Vec::new();
    for (offset, data) in writes() {
        sink.write_at(offset, &data).unwrap();
        let end = offset as usize + data.len();
        plain.resize(plain.len().max(end), 0);
        plain[offset as usize..end].copy_from_slice(&data);
    }
    sink.finish().unwrap();
    drop(sink);
    (out, plain)
}

fn decrypted(dir: &Path, ciphertext: &[u8], identity: &Path) -> anyhow::Result<(Vec<u8>, Decrypted)> {
    let input = dir.join("in.age");
    // A dump's ciphertext and its plaintext: 0600, as vmdump's own files.
    let mut sealed =
        File::options().write(true).create(true).truncate(true).mode(0o600).open(&input).unwrap();
    sealed.write_all(ciphertext).unwrap();
    let output = dir.join("out");
    let mut file =
        File::options().read(true).write(true).create(true).truncate(true).mode(0o600).open(&output).unwrap();
    let report = decrypt(&input, &Identities::load(&[identity.to_path_buf()])?, &mut file)?;
    let mut bytes = Vec::new();
    File::open(&output).unwrap().read_to_end(&mut bytes).unwrap();
    Ok((bytes, report))
}

#[test]
fn recipients_of_each_kind_are_parsed_and_others_refused_by_name() {
    let dir = temp_dir("parse");
    let (x25519, _) = key(&dir, "k");
    assert!(!Recipients::parse(&[x25519, SSH_ED25519.into()]).unwrap().is_empty());
    let error = Recipients::parse(&["ecdsa-sha2-nistp256 AAAA".into()]).unwrap_err().to_string();
    assert!(error.contains("ecdsa-sha2-nistp256 AAAA"), "{error}");
    assert!(Recipients::parse(&["age1notakey".into()]).is_err());
}

#[test]
fn an_encrypted_stream_decrypts_to_the_plain_file_with_any_of_its_keys() {
    let dir = temp_dir("round");
    let ((first, first_key), (second, second_key)) = (key(&dir, "a"), key(&dir, "b"));
    let (ciphertext, plain) = encrypted(&[first, second]);
    for identity in [first_key, second_key] {
        let (bytes, report) = decrypted(&dir, &ciphertext, &identity).unwrap();
        assert!(report.dump && report.cut.is_none(), "{report:?}");
        assert!(bytes == plain, "the decrypted file differs from the plain one");
    }
    let window = b"\x01\x01\x01\x01\x01\x01\x01\x01";
    assert!(!ciphertext.windows(8).any(|w| w == window), "plaintext in the ciphertext");
}

#[test]
fn a_wrong_key_is_refused_naming_the_file_and_the_key() {
    let dir = temp_dir("wrong");
    let ((recipient, _), (_, other)) = (key(&dir, "a"), key(&dir, "b"));
    let (ciphertext, _) = encrypted(&[recipient]);
    let error = decrypted(&dir, &ciphertext, &other).unwrap_err().to_string();
    assert!(error.contains("in.age") && error.contains(&other.display().to_string()), "{error}");
}

/// Where an age file's payload begins: after the header's MAC line and the
/// 16-byte nonce.
fn payload_start(age: &[u8]) -> usize {
    let mac = age.windows(5).position(|w| w == b"\n--- ").unwrap() + 5;
    mac + age[mac..].iter().position(|&b| b == b'\n').unwrap() + 1 + 16
}

/// Whether every byte of `bytes` past the header block is either a hole
/// (zero) or what the plain file has there.
fn is_prefix_of(bytes: &[u8], plain: &[u8]) -> bool {
    bytes.len() <= plain.len() && bytes[4096..].iter().zip(&plain[4096..]).all(|(&b, &p)| b == 0 || b == p)
}

#[test]
fn a_truncated_stream_gives_its_whole_records_flagged_and_nothing_wrong() {
    let dir = temp_dir("cut");
    let (recipient, identity) = key(&dir, "a");
    let (ciphertext, plain) = encrypted(&[recipient]);
    // Whole chunks after the header, and cuts inside them (age's header
    // length varies: it holds a stanza of random length).
    let chunk = |n: usize| payload_start(&ciphertext) + n * (65536 + 16);
    for keep in [ciphertext.len() - 1, ciphertext.len() - 17, chunk(1), chunk(1) + 300, chunk(2) + 5000] {
        let (bytes, report) = decrypted(&dir, &ciphertext[..keep], &identity).unwrap();
        let cut = report.cut.unwrap_or_else(|| panic!("a cut at {keep} is not reported"));
        assert!(cut.contains("in.age") && bytes.len() > 4096, "cut at {keep} of {}: {cut}", ciphertext.len());
        assert!(is_prefix_of(&bytes, &plain), "cut at {keep}: bytes that are not the plain file's");
        assert_eq!(bytes[0], 1, "cut at {keep}: the header is the first one");
    }
}

#[test]
fn a_flipped_byte_is_reported_and_nothing_of_its_chunk_is_used() {
    let dir = temp_dir("flip");
    let (recipient, identity) = key(&dir, "a");
    let (mut ciphertext, plain) = encrypted(&[recipient]);
    let payload = payload_start(&ciphertext);
    let at = ciphertext.len() - 100_000;
    ciphertext[at] ^= 0x40;
    let (bytes, report) = decrypted(&dir, &ciphertext, &identity).unwrap();
    let cut = report.cut.expect("the altered chunk is reported");
    let chunk = (at - payload) / (65536 + 16);
    assert!(cut.contains("fails authentication") && cut.contains(&format!("chunk {chunk} ")), "{cut}");
    // Only the records wholly in the chunks before it are in the file.
    let mut stream_end = 4096u64;
    let mut file_end = 0;
    for (offset, data) in writes() {
        stream_end += 16 + data.len() as u64;
        if stream_end > chunk as u64 * 65536 {
            break;
        }
        file_end = file_end.max(offset + data.len() as u64);
    }
    assert_eq!(bytes.len() as u64, file_end, "the file ends with the last whole record before chunk {chunk}");
    assert!(is_prefix_of(&bytes, &plain));
}

#[test]
fn a_size_limit_stops_the_stream_with_room_to_close_it() {
    let recipients = Recipients::parse(&[key(&temp_dir("limit"), "a").0]).unwrap();
    let limit = 3 << 20;
    let mut out = Vec::new();
    let mut sink = EncryptedSink::new(&recipients, &mut out, Some(limit)).unwrap();
    let data = vec![7u8; 100_000];
    let mut offset = 0;
    let stopped = loop {
        match sink.write_at(offset, &data) {
            Ok(()) => offset += data.len() as u64,
            Err(e) => break e,
        }
    };
    assert!(stopped.is_out_of_space(), "{stopped}");
    sink.write_at(0, &vec![1u8; 1 << 20]).expect("the closing writes pass");
    sink.finish().unwrap();
    drop(sink);
    assert!((out.len() as u64) <= limit, "{} bytes for a limit of {limit}", out.len());
}

#[test]
fn a_file_encrypted_whole_decrypts_as_it_was() {
    let dir = temp_dir("whole");
    let (recipient, identity) = key(&dir, "a");
    let text = b"<6>[    0.000000] Linux version 6.1\n".repeat(5000);
    let ciphertext = Recipients::parse(&[recipient]).unwrap().encrypt(&text).unwrap();
    let (bytes, report) = decrypted(&dir, &ciphertext, &identity).unwrap();
    assert!(!report.dump && report.cut.is_none());
    assert_eq!(bytes, text);
}
