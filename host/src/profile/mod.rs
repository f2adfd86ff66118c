//! Profiles: the TOML settings of a dump (`config/*.toml`), overridden by the
//! command line. Parsing checks syntax and ranges only; plugins are resolved
//! later, when the dump is planned (house style point 14).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::level::DumpLevel;

mod source;
pub use source::{BUILTIN, PROFILE_ENV, ProfileSource, SYSCONFDIR, system_profile};

/// The whole profile. Unknown keys are refused, so a typo is an error.
/// A key a profile leaves out takes the value of `config/default.toml`
/// only for `[dump]` and `[input]`; a profile that names a plugin gives it
/// exactly the parameters it lists.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// `[dump]`.
    #[serde(default)]
    pub dump: DumpSection,
    /// `[input]`.
    #[serde(default)]
    pub input: InputSection,
    /// `[compress]`.
    #[serde(default)]
    pub compress: CompressSection,
    /// `[plugins]`.
    #[serde(default)]
    pub plugins: PluginsSection,
    /// `[[filters]]`: filter plugins, applied in this order.
    #[serde(default)]
    pub filters: Vec<FilterEntry>,
    /// `[makedumpfile]`: which plugin serves each of makedumpfile's
    /// compression options in makedumpfile mode.
    #[serde(default)]
    pub makedumpfile: CompatSection,
    /// `[triage]`: the triage report in the capture kernel.
    #[serde(default)]
    pub triage: TriageSection,
    /// `[output]`: who can read what is written.
    #[serde(default)]
    pub output: OutputSection,
}

/// `[output]`: the public keys every file a dump writes is encrypted to
/// (docs/encryption.md); none = written in the clear. And an object store
/// the dump goes to (docs/object-storage.md): `target`, the keys after it
/// apply to `s3://` outputs given on the command line too.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSection {
    /// age X25519 recipients (`age1...`) and OpenSSH public keys
    /// (`ssh-ed25519 ...`, `ssh-rsa ...`), as `--encrypt-to` takes them.
    pub recipients: Vec<String>,
    /// `s3://BUCKET/KEY-TEMPLATE`: in makedumpfile mode, where the dump goes
    /// instead of the file the script names (which then holds a manifest).
    /// The template's `{host}`, `{release}` and `{time}` are the crashed
    /// machine's host name and kernel release and the dump's UTC time.
    pub target: Option<String>,
    /// The store's URL (`https://host[:port]`); default `AWS_ENDPOINT_URL`,
    /// else AWS's regional endpoint.
    pub endpoint: Option<String>,
    /// The signing region; default `AWS_REGION`, else `us-east-1`.
    pub region: Option<String>,
    /// Size of the dump's parts in MiB (5 to 5120; larger parts when the
    /// dump could need more than 10,000) [default: 5, S3's least].
    pub part_mib: Option<u64>,
    /// Seconds a request may go on being retried [default: 120].
    pub retry_seconds: Option<u64>,
    /// Seconds one attempt of a request may take [default: 60].
    pub request_timeout_seconds: Option<u64>,
    /// A file of the key, mode 0600 or stricter, in the format of AWS's
    /// `credentials` file; default: the `AWS_*` environment.
    pub credentials: Option<PathBuf>,
    /// PEM certificates a private store's certificate is checked against.
    pub ca_file: Option<PathBuf>,
    /// Allow a plain `http://` endpoint that is not on this machine.
    pub allow_http: bool,
    /// A directory the dump is written to when the store stays away.
    pub fallback: Option<PathBuf>,
}

/// `[triage]`: in makedumpfile mode, the triage report (`vmdump triage
/// --json`) written beside the dump, before it: `DUMPFILE.triage.json`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TriageSection {
    /// Write it (off by default).
    pub beside_dump: bool,
}

/// `[makedumpfile]`: a compressor spec (`NAME[:LEVEL]`) for each of
/// makedumpfile's options; unset = vmdump's choice for that format.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CompatSection {
    /// Serves `-c` (zlib format), e.g. a vendor's accelerated zlib.
    pub zlib: Option<String>,
    /// Serves `-l` (lzo format).
    pub lzo: Option<String>,
    /// Serves `-p` (snappy format).
    pub snappy: Option<String>,
    /// Serves `-z` (zstd format).
    pub zstd: Option<String>,
}

impl CompatSection {
    /// The compressor spec for makedumpfile's option `flag` (`-c`...), if the profile sets one.
    pub fn for_option(&self, flag: &str) -> Option<&str> {
        match flag {
            "-c" => self.zlib.as_deref(),
            "-l" => self.lzo.as_deref(),
            "-p" => self.snappy.as_deref(),
            "-z" => self.zstd.as_deref(),
            _ => None,
        }
    }
}

/// One `[[filters]]` entry: a filter plugin and its parameters.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FilterEntry {
    /// Plugin name (`vmdump plugins` lists filters).
    pub name: String,
    /// Parameters handed to the plugin (values as text).
    #[serde(default)]
    pub params: BTreeMap<String, toml::Value>,
}

impl FilterEntry {
    /// The parameters as text pairs.
    pub fn params(&self) -> vmdump_sdk::Params {
        params_of(&self.params)
    }
}

/// TOML values as the text a plugin receives.
fn params_of(table: &BTreeMap<String, toml::Value>) -> vmdump_sdk::Params {
    vmdump_sdk::Params::new(table.iter().map(|(k, v)| {
        let text = match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => format!("{other:?}"),
        };
        (k.clone(), text)
    }))
}

/// The built-in profile: `config/default.toml`, compiled in, so running
/// without `--profile` and with `--profile config/default.toml` is the same.
const DEFAULT_PROFILE: &str = include_str!("../../../config/default.toml");

impl Default for Profile {
    fn default() -> Self {
        Self::parse(DEFAULT_PROFILE, Path::new("config/default.toml")).expect("config/default.toml is valid")
    }
}

/// `[dump]`: what to keep and how to write it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DumpSection {
    /// Dump level bits (`-d`), 0..=31.
    #[serde(deserialize_with = "profile_level")]
    pub level: DumpLevel,
    /// Worker threads; 0 = the cores available.
    pub threads: usize,
    /// Output format.
    pub format: OutputFormat,
}

impl Default for DumpSection {
    fn default() -> Self {
        Self { level: DumpLevel::ZERO, threads: 0, format: OutputFormat::Kdump }
    }
}

/// `dump.level`, named in the message when it is out of range.
fn profile_level<'de, D: serde::Deserializer<'de>>(d: D) -> Result<DumpLevel, D::Error> {
    let bits = i64::deserialize(d)?;
    u8::try_from(bits)
        .ok()
        .and_then(|b| DumpLevel::new(b).ok())
        .ok_or_else(|| serde::de::Error::custom(format!("dump.level = {bits} is out of range 0..=31")))
}

/// The output container.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// kdump-compressed, written at offsets.
    Kdump,
    /// kdump-compressed in the flattened stream (for pipes).
    Flattened,
}

/// `[input]`: how the vmcore is read.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct InputSection {
    /// Map the input in windows (with pread fallback); false = pread only.
    pub mmap: bool,
    /// Size of one mmap window in MiB (1..=1024).
    pub window_mib: u32,
}

impl Default for InputSection {
    fn default() -> Self {
        Self { mmap: true, window_mib: 4 }
    }
}

/// `[compress]`: the compressor plugin and its parameters.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CompressSection {
    /// Plugin name, or "none".
    pub plugin: String,
    /// Parameters handed to the plugin (values as text); none by default.
    pub params: BTreeMap<String, toml::Value>,
    /// Store pages that look random raw without compressing them; unset:
    /// for the zlib format only ([`CompressSection::skips_random_pages`]).
    pub skip_random: Option<bool>,
}

impl Default for CompressSection {
    fn default() -> Self {
        Self { plugin: "zstd".into(), params: BTreeMap::new(), skip_random: None }
    }
}

impl CompressSection {
    /// Whether pages of `format` that look random are stored without
    /// compressing them: as set, else only for zlib, whose encoders spend as
    /// long on a random page as on any (the test costs about 1.7 µs a page,
    /// more than lzo, snappy or zstd spend giving up on one; docs/deflate.md).
    pub fn skips_random_pages(&self, format: vmdump_sdk::KdumpFormat) -> bool {
        self.skip_random.unwrap_or(format == vmdump_sdk::KdumpFormat::Zlib)
    }
}

/// `[plugins]`: where else to look for plugins.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PluginsSection {
    /// Directories searched after `--plugin-dir`.
    pub dirs: Vec<PathBuf>,
}

/// A profile that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// The file cannot be read.
    #[error("cannot read profile {path}: {cause}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// Not valid TOML, or a key the profile does not have.
    #[error("profile {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A value out of range.
    #[error("profile {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl Profile {
    /// Reads and checks a profile file.
    ///
    /// # Errors
    /// [`ProfileError`] naming the file and the problem.
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let text =
            std::fs::read_to_string(path).map_err(|cause| ProfileError::Read { path: path.into(), cause })?;
        Self::parse(&text, path)
    }

    /// Parses profile text; `path` only names it in errors.
    ///
    /// # Errors
    /// [`ProfileError::Parse`] or [`ProfileError::Invalid`].
    pub fn parse(text: &str, path: &Path) -> Result<Self, ProfileError> {
        let profile: Self = toml::from_str(text)
            .map_err(|e| ProfileError::Parse { path: path.into(), message: e.to_string() })?;
        profile.validate().map_err(|message| ProfileError::Invalid { path: path.into(), message })?;
        Ok(profile)
    }

    /// Range checks shared by files and command-line overrides.
    ///
    /// # Errors
    /// A message naming the key.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=1024).contains(&self.input.window_mib) {
            return Err(format!("input.window_mib = {} is out of range 1..=1024", self.input.window_mib));
        }
        if self.compress.plugin.is_empty() {
            return Err("compress.plugin is empty (use \"none\" for raw pages)".into());
        }
        self.recipients().map(drop).map_err(|e| format!("output.recipients: {e}"))
    }

    /// The public keys of `[output] recipients`, parsed.
    ///
    /// # Errors
    /// A recipient that is no key vmdump can encrypt to.
    pub fn recipients(&self) -> Result<crate::crypt::Recipients, crate::crypt::CryptError> {
        crate::crypt::Recipients::parse(&self.output.recipients)
    }

    /// The plugin parameters as text pairs.
    pub fn plugin_params(&self) -> vmdump_sdk::Params {
        params_of(&self.compress.params)
    }

    /// Applies `--compress NAME[:LEVEL]`: the plugin, and its level when given
    /// (other profile parameters are dropped when the plugin changes).
    ///
    /// # Errors
    /// A message when LEVEL is not an integer.
    pub fn set_compressor(&mut self, spec: &str) -> Result<(), String> {
        let (name, level) = match spec.split_once(':') {
            Some((name, level)) => {
                let level: i64 = level
                    .parse()
                    .map_err(|_| format!("--compress {spec}: level `{level}` is not an integer"))?;
                (name, Some(level))
            }
            None => (spec, None),
        };
        if name != self.compress.plugin {
            self.compress.params.clear();
            self.compress.plugin = name.to_owned();
        }
        if let Some(level) = level {
            self.compress.params.insert("level".into(), toml::Value::Integer(level));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../config")
    }

    #[test]
    fn every_shipped_profile_parses() {
        for name in ["default", "fast", "small"] {
            let profile = Profile::load(&config_dir().join(format!("{name}.toml"))).unwrap();
            assert!(profile.dump.level.excludes_zero_pages(), "{name}");
        }
        let default = Profile::load(&config_dir().join("default.toml")).unwrap();
        assert_eq!(default, Profile::default(), "config/default.toml and Profile::default() agree");
        assert_eq!(default.plugin_params().get_str("level"), Some("-1"));
        let fast = Profile::load(&config_dir().join("fast.toml")).unwrap();
        assert!(fast.plugin_params().is_empty(), "a profile naming a plugin gets only its own params");
    }

    #[test]
    fn the_readmes_recipients_parse_and_a_bad_one_names_the_key() {
        let readme = std::fs::read_to_string(config_dir().join("README.md")).unwrap();
        let at = readme.find("```toml\n[output]").expect("the [output] example");
        let example = &readme[at + 8..][..readme[at + 8..].find("```").unwrap()];
        let profile = Profile::parse(example, Path::new("README.md")).unwrap();
        assert_eq!(profile.output.recipients.len(), 2);
        assert!(!profile.recipients().unwrap().is_empty());
        let bad = "[output]\nrecipients = [\"age1nope\"]\n";
        let err = Profile::parse(bad, Path::new("p.toml")).unwrap_err().to_string();
        assert!(err.contains("output.recipients") && err.contains("age1nope"), "{err}");
    }

    #[test]
    fn unknown_keys_and_bad_ranges_name_the_key() {
        let err = Profile::parse("[dump]\nlevle = 3\n", Path::new("p.toml")).unwrap_err().to_string();
        assert!(err.contains("levle") && err.contains("p.toml"), "{err}");
        let err = Profile::parse("[dump]\nlevel = 40\n", Path::new("p.toml")).unwrap_err().to_string();
        assert!(err.contains("dump.level = 40"), "{err}");
    }

    #[test]
    fn the_command_line_then_the_environment_then_the_system_file_then_the_built_in() {
        let dir = std::env::temp_dir().join(format!("vmdump-profile-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (system, absent) = (dir.join("vmdump.toml"), dir.join("absent.toml"));
        std::fs::write(&system, "[dump]\nlevel = 31\n").unwrap();
        let (cli, env) = (Path::new("cli.toml"), std::ffi::OsStr::new("env.toml"));
        let choose = ProfileSource::choose;
        assert_eq!(choose(Some(cli), Some(env), &system), ProfileSource::CommandLine(cli.into()));
        assert_eq!(choose(None, Some(env), &system), ProfileSource::Environment("env.toml".into()));
        assert_eq!(choose(None, None, &system), ProfileSource::System(system.clone()));
        assert_eq!(choose(None, Some("".as_ref()), &system), ProfileSource::System(system.clone()));
        assert_eq!(choose(None, None, &absent), ProfileSource::BuiltIn);
        assert_eq!(choose(Some(Path::new("builtin")), Some(env), &system), ProfileSource::BuiltIn);
        assert_eq!(choose(None, Some("builtin".as_ref()), &system), ProfileSource::BuiltIn);
        assert_eq!(ProfileSource::System(system.clone()).load().unwrap().dump.level, DumpLevel::ALL);
        assert_eq!(ProfileSource::BuiltIn.load().unwrap(), Profile::default());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_system_profile_is_the_default_profile_with_comments() {
        let system = Profile::load(&config_dir().join("system.toml")).unwrap();
        assert_eq!(
            system,
            Profile::default(),
            "installing /etc/vmdump/vmdump.toml changes nothing by itself"
        );
    }

    #[test]
    fn compress_override_switches_plugin_and_level() {
        let mut p = Profile::default();
        p.set_compressor("zlib:6").unwrap();
        assert_eq!(p.compress.plugin, "zlib");
        assert_eq!(p.plugin_params().get_str("level"), Some("6"));
        p.set_compressor("lzo").unwrap();
        assert!(p.plugin_params().is_empty());
        assert!(p.set_compressor("zlib:x").is_err());
    }
}
