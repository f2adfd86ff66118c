//! The config: makedumpfile.conf(5)'s erase commands and loops, and the
//! type of each global they start from (BTF describes types, not the
//! variables of the kernel, so a line names its global's type):
//!
//! ```text
//! [vmlinux]
//! erase SYMBOL[.MEMBER...] [size N[K|M] | size EXPR | nullify] [type C-TYPE]
//! for ID in EXPR [via MEMBER | within STRUCT:MEMBER] [type C-TYPE]
//!     erase ID[.MEMBER...] [size ... | nullify]
//! endfor
//! ```

use std::fmt;

/// A path from a symbol or a loop variable through members: `init_task.mm.pgd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    /// The symbol, or the loop's variable.
    pub root: String,
    /// Members, in order (a pointer met on the way is followed).
    pub members: Vec<String>,
    /// The C type of a symbol root, as the line names it.
    pub root_type: Option<String>,
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.root)?;
        self.members.iter().try_for_each(|m| write!(f, ".{m}"))
    }
}

/// How much an erase covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Size {
    /// What the type says (a `char *`: its string, up to 1024 bytes).
    Typed,
    /// A number of bytes.
    Bytes(u64),
    /// The integer value of an expression.
    Of(Expr),
    /// The pointer itself, set to zero.
    Nullify,
}

/// One erase command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Erase {
    /// What is erased.
    pub target: Expr,
    /// How much.
    pub size: Size,
    /// Its line in the config.
    pub line: usize,
}

/// How a loop walks its list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Walk {
    /// Each element of an array.
    Array,
    /// A struct (or a pointer to one) and the member that points to the next.
    Via(String),
    /// A `struct list_head` and the struct and member its entries are in.
    Within(String, String),
}

/// A command of the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// An erase outside any loop.
    Erase(Erase),
    /// A loop and the erases of its body (on `var`).
    For {
        /// The iteration variable.
        var: String,
        /// The list.
        list: Expr,
        /// How it is walked.
        walk: Walk,
        /// The body.
        body: Vec<Erase>,
        /// Its line.
        line: usize,
    },
}

/// A config error, with its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

fn error(line: usize, message: impl Into<String>) -> ConfigError {
    ConfigError { line, message: message.into() }
}

/// Parses `SYMBOL[.MEMBER...]`.
fn expr(text: &str, line: usize) -> Result<Expr, ConfigError> {
    let mut parts = text.split('.');
    let root = parts.next().unwrap_or_default().to_owned();
    let members: Vec<String> = parts.map(str::to_owned).collect();
    let ident = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if !ident(&root) || !members.iter().all(|m| ident(m)) {
        return Err(error(line, format!("`{text}` is not SYMBOL[.MEMBER...]")));
    }
    Ok(Expr { root, members, root_type: None })
}

/// A size value: `N`, `NK`, `NM` (case-insensitive), decimal or hex.
fn size_value(text: &str) -> Option<u64> {
    let (digits, unit) = match text.as_bytes().last()? {
        b'k' | b'K' => (&text[..text.len() - 1], 1024),
        b'm' | b'M' => (&text[..text.len() - 1], 1 << 20),
        _ => (text, 1),
    };
    vmdump_sdk::parse_u64(digits).and_then(|n| n.checked_mul(unit)).filter(|&n| n > 0)
}

/// Splits a trailing `type C-TYPE` off `words`.
fn take_type<'w>(words: &'w [&'w str]) -> (&'w [&'w str], Option<String>) {
    match words.iter().position(|&w| w == "type") {
        Some(at) if at + 1 < words.len() => (&words[..at], Some(words[at + 1..].join(" "))),
        _ => (words, None),
    }
}

/// Parses the words after `erase`.
fn erase(words: &[&str], line: usize) -> Result<Erase, ConfigError> {
    let (words, root_type) = take_type(words);
    let Some((first, rest)) = words.split_first() else {
        return Err(error(line, "erase needs what to erase"));
    };
    let mut target = expr(first, line)?;
    target.root_type = root_type;
    let size = match rest {
        [] => Size::Typed,
        ["nullify"] => Size::Nullify,
        ["size", value] => match size_value(value) {
            Some(n) => Size::Bytes(n),
            None => Size::Of(expr(value, line)?),
        },
        _ => {
            return Err(error(line, format!("after `{first}`: expected `size N`, `size EXPR` or `nullify`")));
        }
    };
    Ok(Erase { target, size, line })
}

/// Parses the words after `for`.
fn for_head(words: &[&str], line: usize) -> Result<(String, Expr, Walk), ConfigError> {
    let (words, root_type) = take_type(words);
    let (var, list, walk) = match words {
        [var, "in", list] => (var, list, Walk::Array),
        [var, "in", list, "via", next] => (var, list, Walk::Via((*next).to_owned())),
        [var, "in", list, "within", inside] => {
            let (strukt, member) = inside
                .split_once(':')
                .ok_or_else(|| error(line, format!("`within {inside}`: expected STRUCT:MEMBER")))?;
            (var, list, Walk::Within(strukt.to_owned(), member.to_owned()))
        }
        _ => return Err(error(line, "expected `for ID in LIST [via MEMBER | within STRUCT:MEMBER]`")),
    };
    let mut list = expr(list, line)?;
    list.root_type = root_type;
    Ok(((*var).to_owned(), list, walk))
}

/// Parses a whole config.
///
/// # Errors
/// The first line that is not a command, an `endfor` without `for`, a
/// loop left open, a loop body that erases something else than its variable.
pub fn parse(text: &str) -> Result<Vec<Command>, ConfigError> {
    let mut commands = Vec::new();
    let mut open: Option<(String, Expr, Walk, Vec<Erase>, usize)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let words: Vec<&str> = raw.split('#').next().unwrap_or_default().split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            [section] if section.starts_with('[') && section.ends_with(']') => {}
            ["erase", rest @ ..] => {
                let e = erase(rest, line)?;
                match &mut open {
                    Some((var, _, _, body, _)) if e.target.root == *var => body.push(e),
                    Some((var, ..)) => {
                        return Err(error(line, format!("inside `for {var}`, erase `{var}[.MEMBER...]`")));
                    }
                    None => commands.push(Command::Erase(e)),
                }
            }
            ["for", rest @ ..] => {
                if open.is_some() {
                    return Err(error(line, "loops do not nest"));
                }
                let (var, list, walk) = for_head(rest, line)?;
                open = Some((var, list, walk, Vec::new(), line));
            }
            ["endfor"] => {
                let (var, list, walk, body, line) =
                    open.take().ok_or_else(|| error(line, "endfor without for"))?;
                commands.push(Command::For { var, list, walk, body, line });
            }
            _ => return Err(error(line, format!("`{}` is not a command (erase, for, endfor)", words[0]))),
        }
    }
    if let Some((var, .., line)) = open {
        return Err(error(line, format!("`for {var}` has no endfor")));
    }
    Ok(commands)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_as_the_man_page_writes_them() {
        let text = "[vmlinux]\n# comment\nerase array_var\nerase mystruct1.buffer size 25 type struct s1\n\
                    erase mystruct1.addr2 size 1K\nerase mystruct1.addr1 nullify\n\
                    erase mystruct2.addr size mystruct2.addr_size\n\
                    for t in init_task.tasks within task_struct:tasks type struct task_struct\n  erase t.comm\nendfor\n";
        let commands = parse(text).unwrap();
        assert_eq!(commands.len(), 6);
        let Command::Erase(e) = &commands[1] else { panic!() };
        assert_eq!((e.target.to_string(), &e.size), ("mystruct1.buffer".to_owned(), &Size::Bytes(25)));
        assert_eq!(e.target.root_type.as_deref(), Some("struct s1"));
        let Command::Erase(e) = &commands[2] else { panic!() };
        assert_eq!(e.size, Size::Bytes(1024));
        let Command::Erase(e) = &commands[4] else { panic!() };
        assert!(matches!(&e.size, Size::Of(x) if x.to_string() == "mystruct2.addr_size"));
        let Command::For { var, walk, body, .. } = &commands[5] else { panic!() };
        assert_eq!(
            (var.as_str(), walk, body.len()),
            ("t", &Walk::Within("task_struct".into(), "tasks".into()), 1)
        );
    }

    #[test]
    fn errors_name_their_line() {
        assert_eq!(parse("erase a\nwipe b\n").unwrap_err().line, 2);
        assert_eq!(parse("for x in a via next\nerase y.z\nendfor").unwrap_err().line, 2);
        assert_eq!(parse("endfor").unwrap_err().line, 1);
        assert_eq!(parse("for x in a\n").unwrap_err().line, 1);
        assert_eq!(parse("erase a size 0\n").unwrap_err().line, 1);
        assert_eq!(parse("erase a.b-c\n").unwrap_err().line, 1);
    }
}
