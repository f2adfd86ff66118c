//! The plugin loader against real shared objects: the workspace's plugins,
//! deliberately broken C plugins built here with `cc`, and a panicking Rust
//! plugin. Needs `cargo build --workspace` (same profile) for the `.so` files.

mod support;

use std::process::Command;
use std::sync::Arc;

use support::{build_c_plugin, build_dir, built_plugin, temp_dir};
use vmdump::codec::{Codec, Encoded};
use vmdump::plugin::{LoadError, Origin, Registry, SearchPath, load_compressor};
use vmdump_sdk::Params;
use vmdump_sdk::client::{StderrHost, TableError};
use vmdump_sdk::testing::{check_compressor, corpus};

const WORKSPACE_PLUGINS: [(&str, &str); 5] = [
    ("zlib", "libvmdump_compress_zlib.so"),
    ("zstd", "libvmdump_compress_zstd.so"),
    ("lzo", "libvmdump_compress_lzo.so"),
    ("snappy", "libvmdump_compress_snappy.so"),
    ("c-zlib", "libvmdump_c_zlib.so"),
];

#[test]
fn every_workspace_plugin_passes_the_kit_through_dlopen() {
    for (name, file) in WORKSPACE_PLUGINS {
        let loaded = load_compressor(&built_plugin(file)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.info.name, name);
        let report =
            check_compressor(loaded.plugin, &Params::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(report.independent_decoder, "{name} must be checked by a reference decoder");
    }
}

#[test]
fn vmdump_plugins_lists_the_five_standard_plugins() {
    let out = Command::new(env!("CARGO_BIN_EXE_vmdump"))
        .arg("plugins")
        .env_remove("VMDUMP_PLUGIN_PATH")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for (name, file) in WORKSPACE_PLUGINS {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing:\n{text}"));
        assert!(line.contains(file) && line.contains("1.0"), "{line}");
    }
    assert!(
        text.contains("zstd (0x20)") && text.contains("lzo (0x2)") && text.contains("snappy (0x4)"),
        "{text}"
    );
}

#[test]
fn the_kit_fails_on_a_plugin_that_lies_about_its_format() {
    let dir = temp_dir("kit-lies");
    let honest = load_compressor(&build_c_plugin(&dir, "store", None)).unwrap();
    check_compressor(honest.plugin, &Params::default()).expect("an honest store plugin passes");
    let liar = load_compressor(&build_c_plugin(&dir, "liar", Some("BROKEN_CLAIMS_ZLIB"))).unwrap();
    let failure = check_compressor(liar.plugin, &Params::default()).unwrap_err();
    assert_eq!(failure.check, "independent decoder", "{failure}");
}

fn load_variant(flag: &str) -> LoadError {
    let dir = temp_dir(&flag.to_lowercase());
    load_compressor(&build_c_plugin(&dir, "broken", Some(flag))).map(|_| ()).expect_err(flag)
}

#[test]
fn each_broken_table_gets_its_own_error() {
    assert!(matches!(load_variant("BROKEN_NO_ENTRY"), LoadError::NotAPlugin { .. }));
    let table_error = |flag| match load_variant(flag) {
        LoadError::BadTable { cause, path } => {
            assert!(path.ends_with("libvmdump_broken.so"));
            cause
        }
        other => panic!("{flag}: {other}"),
    };
    assert_eq!(table_error("BROKEN_WRONG_MAGIC"), TableError::BadMagic(0x1234));
    assert!(matches!(
        table_error("BROKEN_OTHER_MAJOR"),
        TableError::AbiMajor { plugin: (2, _), host: (1, 1) }
    ));
    assert!(matches!(table_error("BROKEN_SHORT_TABLE"), TableError::ShortTable { size: 40, .. }));
    assert_eq!(table_error("BROKEN_REFUSES_HOST"), TableError::Refused);
    assert_eq!(table_error("BROKEN_NO_DECOMPRESS"), TableError::MissingCallback("decompress"));
    let message = load_variant("BROKEN_OTHER_MAJOR").to_string();
    assert!(
        message.contains("libvmdump_broken.so")
            && message.contains("plugin ABI 2.")
            && message.contains("host ABI 1.1"),
        "{message}"
    );
}

#[test]
fn a_file_that_is_not_a_shared_object_is_refused() {
    let dir = temp_dir("not-elf");
    let file = dir.join("libtext.so");
    std::fs::write(&file, "not a library").unwrap();
    assert!(matches!(load_compressor(&file), Err(LoadError::Open { .. })));
}

#[test]
fn a_failing_module_init_is_reported_with_the_plugins_message() {
    let dir = temp_dir("init-fails");
    let plugin = load_compressor(&build_c_plugin(&dir, "initfail", Some("BROKEN_INIT_FAILS"))).unwrap();
    let err =
        Codec::new(&plugin, &Params::default(), Arc::new(StderrHost), 4096).err().expect("init must fail");
    assert!(err.to_string().contains("hardware accelerator not present"), "{err}");
}

/// Runs every corpus page through the host's policy and checks that no page
/// is lost: each is either compressed or stored raw.
fn run_pages(codec: &Codec) -> vmdump::codec::EncodeStats {
    let mut encoder = codec.encoder();
    for page in corpus().iter().cycle().take(20) {
        match encoder.encode(&page.bytes) {
            Encoded::Compressed(bytes, _) => assert!(!bytes.is_empty() && bytes.len() < page.bytes.len()),
            Encoded::Raw => {}
        }
    }
    encoder.stats()
}

fn codec_for(flag: Option<&str>, name: &str) -> Codec {
    let dir = temp_dir(name);
    let plugin = load_compressor(&build_c_plugin(&dir, name, flag)).unwrap();
    Codec::new(&plugin, &Params::default(), Arc::new(StderrHost), 4096).unwrap()
}

#[test]
fn a_plugin_failing_mid_run_degrades_to_raw_pages() {
    let codec = codec_for(Some("BROKEN_FAILS_MIDRUN"), "midrun");
    let stats = run_pages(&codec);
    assert_eq!(stats.incompressible + stats.plugin_failed, 20, "{stats:?}");
    assert_eq!(stats.plugin_failed, 18, "{stats:?}");
    let failure = codec.failure().expect("failure recorded");
    assert!(failure.to_string().contains("device timeout on page 3"), "{failure}");
}

#[test]
fn a_plugin_reporting_more_bytes_than_the_buffer_is_contained() {
    let codec = codec_for(Some("BROKEN_OVERSIZE"), "oversize");
    let stats = run_pages(&codec);
    assert_eq!(stats.plugin_failed, 20, "{stats:?}");
    assert!(codec.failure().unwrap().to_string().contains("misbehaved"));
}

#[test]
fn a_panicking_rust_plugin_is_caught_and_pages_stored_raw() {
    let plugin = load_compressor(&built_plugin("libvmdump_test_panicky.so")).unwrap();
    let codec = Codec::new(&plugin, &Params::default(), Arc::new(StderrHost), 4096).unwrap();
    let stats = run_pages(&codec);
    assert_eq!((stats.compressed, stats.plugin_failed), (2, 18), "{stats:?}");
    let failure = codec.failure().unwrap();
    assert!(failure.is_panic() && failure.message.contains("simulated bug on page 3"), "{failure}");
}

#[test]
fn duplicates_are_shadowed_and_reported() {
    let dir = temp_dir("shadow");
    let first = build_c_plugin(&dir, "store", None);
    let other = temp_dir("shadow-2");
    build_c_plugin(&other, "store", None);
    let registry =
        Registry::discover(SearchPath::new(&[dir.to_path_buf(), other.to_path_buf()], &[], None, None));
    assert_eq!(registry.compressor("store").unwrap().origin, Origin::File(first));
    assert!(
        registry.skipped.iter().any(|e| matches!(e, LoadError::Shadowed { name, .. } if name == "store"))
    );
    let missing = registry.compressor("nope").unwrap_err().to_string();
    assert!(
        missing.contains("available: store") && missing.contains(&dir.display().to_string()),
        "{missing}"
    );
    let _ = build_dir();
}

#[test]
fn a_registry_of_named_plugins_opens_the_files_of_those_names_only() {
    use vmdump::plugin::Kind;
    let dir = temp_dir("named");
    // A file of zlib's name that holds another plugin: skipped, the built-in zlib serves.
    let misnamed = build_c_plugin(&dir, "store", None);
    let zlib_file = dir.join(vmdump::plugin::file_names(Kind::Compressor, "zlib")[0].clone());
    std::fs::rename(&misnamed, &zlib_file).unwrap();
    let broken = build_c_plugin(&dir, "broken", Some("BROKEN_WRONG_MAGIC"));
    let path = SearchPath::new(&[dir.to_path_buf()], &[], None, None);
    let registry = Registry::named(path.clone(), &["zlib", "broken", "nope"], &["nope"]);
    assert_eq!(registry.compressor("zlib").unwrap().origin, Origin::BuiltIn);
    assert!(
        registry.skipped.iter().any(|e| matches!(e, LoadError::Misnamed { path, .. } if *path == zlib_file)),
        "{:?}",
        registry.skipped
    );
    assert_eq!(registry.compressors.len(), 1, "only zlib was asked for and found");
    let message = registry.compressor("broken").unwrap_err().to_string();
    for word in ["`broken`", "libvmdump_compress_broken.so", "libvmdump_broken.so", "wrong magic"] {
        assert!(message.contains(word), "{word}: {message}");
    }
    assert!(message.contains(&broken.display().to_string()), "{message}");
    let message = registry.filter("nope").unwrap_err().to_string();
    assert!(message.contains("libvmdump_filter_nope.so") && message.contains(&dir.display().to_string()));
    // A name that is no file name opens nothing.
    let escape = format!("../{}/store", dir.file_name().unwrap().to_string_lossy());
    let registry = Registry::named(path, &[&escape], &[]);
    assert!(registry.compressor(&escape).unwrap_err().to_string().contains("no file (the name has"));
}

#[test]
fn the_rust_and_the_c_zlib_plugins_read_each_other() {
    // The Rust plugin runs on libdeflate, the C one on the system's zlib: each
    // decoding the other's pages is a check by a decoder we did not write.
    let host = Arc::new(StderrHost);
    let rust = load_compressor(&built_plugin("libvmdump_compress_zlib.so")).unwrap();
    let c = load_compressor(&built_plugin("libvmdump_c_zlib.so")).unwrap();
    let (rust, c) = (
        rust.plugin.init(&Params::default(), host.clone()).unwrap(),
        c.plugin.init(&Params::default(), host).unwrap(),
    );
    for (writer, reader) in [(&rust, &c), (&c, &rust)] {
        let (mut w, mut r) = (writer.new_context().unwrap(), reader.new_context().unwrap());
        let mut packed = vec![0; writer.bound(4096)];
        let mut page = vec![0; 4096];
        for original in corpus() {
            let n = w.compress(&original.bytes, &mut packed).unwrap();
            w.reset().unwrap();
            assert_eq!(r.decompress(&packed[..n], &mut page).unwrap(), 4096);
            assert_eq!(page, original.bytes, "{} page", original.kind);
        }
    }
}

#[test]
fn the_c_plugin_of_the_sdk_readme_builds_and_passes_the_kit() {
    let readme = std::fs::read_to_string(support::workspace_root().join("sdk/README.md")).unwrap();
    let code = readme.split("```c\n").nth(1).and_then(|rest| rest.split("```").next()).expect("a ```c block");
    let dir = temp_dir("readme-c");
    let source = dir.join("mini_zlib.c");
    std::fs::write(&source, code).unwrap();
    let so = dir.join("libvmdump_mini_zlib.so");
    let include = support::workspace_root().join("sdk/include");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-I"])
        .arg(&include)
        .arg(&source)
        .args(["-lz", "-o"])
        .arg(&so)
        .status()
        .unwrap();
    assert!(status.success(), "the README's C plugin does not compile");
    let loaded = load_compressor(&so).unwrap();
    assert_eq!(loaded.info.name, "mini-zlib");
    check_compressor(loaded.plugin, &Params::default()).unwrap();
}

#[test]
fn the_example_filter_plugins_pass_the_kit_through_dlopen() {
    use vmdump::plugin::load_filter;
    use vmdump_sdk::Verdict;
    use vmdump_sdk::testing::{PageCase, check_filter};
    let ranges = load_filter(&built_plugin("libvmdump_filter_pfn_ranges.so")).unwrap();
    let cases = [(PageCase::at(0x15), Verdict::Exclude), (PageCase::at(0x30), Verdict::Keep)];
    check_filter(ranges.plugin, &Params::new([("ranges", "0x10-0x20")]), &cases)
        .unwrap_or_else(|e| panic!("{e}"));
    let pattern = load_filter(&built_plugin("libvmdump_filter_pattern.so")).unwrap();
    let poison = PageCase::at(7).with_data(vec![0x6b; 4096]);
    let text = PageCase::at(8).with_data(corpus()[3].bytes.clone());
    let cases = [(poison, Verdict::Exclude), (text, Verdict::Keep)];
    check_filter(pattern.plugin, &Params::default(), &cases).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        load_compressor(&built_plugin("libvmdump_filter_pattern.so")),
        Err(LoadError::NotAPlugin { .. })
    ));
}
