//! The vmdump binary's code lies in the order of host/link-order.txt (the
//! functions a capture kernel's dump runs, side by side, the list's first
//! last: host/build.rs), so that a dump touches few of its pages. Fails
//! when the linker did not apply the list, and when too few of the
//! functions it names are left in the binary (the code changed: run
//! scripts/link-order.sh).

mod support;

use std::collections::HashMap;
use std::process::Command;

/// A symbol without the hash of its crate's build (legacy mangling), which
/// differs between the builds the list covers; a list entry that leaves
/// the hash open (`NAME17h*E`) likewise.
fn unhashed(symbol: &str) -> &str {
    if let Some(open) = symbol.strip_suffix("17h*E") {
        return open;
    }
    let hashed = symbol.len() > 20 && symbol.ends_with('E') && symbol[symbol.len() - 20..].starts_with("17h");
    if hashed { &symbol[..symbol.len() - 20] } else { symbol }
}

/// A symbol without the suffix ThinLTO gives a function it exports from
/// its module (`.llvm.<hash of the module>`), which the list leaves out.
fn without_lto_suffix(symbol: &str) -> &str {
    symbol.split_once(".llvm.").map_or(symbol, |(name, _)| name)
}

#[test]
fn the_binary_follows_the_link_order() {
    let list = std::fs::read_to_string(support::workspace_root().join("host/link-order.txt")).unwrap();
    let nm = Command::new("nm").arg(env!("CARGO_BIN_EXE_vmdump")).output().expect("nm (binutils) runs");
    assert!(nm.status.success(), "nm: {}", String::from_utf8_lossy(&nm.stderr));
    let text = String::from_utf8_lossy(&nm.stdout);
    let address: HashMap<&str, u64> = text
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let at = u64::from_str_radix(words.next()?, 16).ok()?;
            let kind = words.next()?;
            matches!(kind, "t" | "T").then_some((without_lto_suffix(words.next()?), at))
        })
        .collect();
    // Each function once: the list names it as each build does, one after the other.
    let symbols: Vec<&str> = list.lines().filter(|l| !l.is_empty()).collect();
    let functions: Vec<&[&str]> = symbols.chunk_by(|a, b| unhashed(a) == unhashed(b)).collect();
    // Fresh: the functions are still there, whatever build's hash they carry.
    let present: std::collections::HashSet<&str> = address.keys().map(|s| unhashed(s)).collect();
    let left = functions.iter().filter(|names| present.contains(unhashed(names[0]))).count();
    assert!(
        left * 4 >= functions.len() * 3,
        "only {left} of the {} functions of host/link-order.txt are in the binary: run scripts/link-order.sh",
        functions.len()
    );
    // Applied: those named as this build names them lie in the list's
    // reverse order (every build names the standard library's and the C
    // code's alike).
    let by_unhashed: HashMap<&str, u64> = address.iter().map(|(name, &at)| (unhashed(name), at)).collect();
    let at = |name: &&str| match name.ends_with("17h*E") {
        true => by_unhashed.get(unhashed(name)).copied(),
        false => address.get(name).copied(),
    };
    let found: Vec<u64> = functions.iter().filter_map(|names| names.iter().find_map(at)).collect();
    let in_order = found.windows(2).filter(|pair| pair[0] > pair[1]).count();
    assert!(
        found.len() > 100 && in_order * 10 >= (found.len() - 1) * 9,
        "{in_order} of {} consecutive listed functions lie in the list's order: the linker did not apply \
         host/link-order.txt (host/build.rs hands it to lld only)",
        found.len().saturating_sub(1)
    );
    let span = found.iter().max().unwrap() - found.iter().min().unwrap();
    eprintln!(
        "{left} of {} listed functions left, {} of them in order in {} KiB",
        functions.len(),
        found.len(),
        span >> 10
    );
}
