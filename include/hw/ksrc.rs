// SPDX-License-Identifier: GPL-2.0
//! Test-only reader of the Linux mlx5 sources: a small parser for the PRM layouts of
//! `mlx5_ifc.h` (`struct`/`union mlx5_ifc_<name>_bits`, where `u8 x[N]` is N *bits*) and for
//! the numeric constants of the mlx5 headers (enums and object-like `#define`s).
//!
//! It knows just enough C for those files: `u8 name[N]`, `u8 name[N][M]`, `u8 name[][M]`,
//! `struct|union mlx5_ifc_X_bits name[K]`, anonymous `struct { ... };` / `union { ... };`,
//! `DECLARE_FLEX_ARRAY(struct X, name)`, and constant expressions with `+ - * << >> | & ~`,
//! parentheses and `BIT(n)`.

use std::{
    boxed::Box,
    cell::RefCell,
    collections::HashMap,
    env, format, fs,
    path::{Path, PathBuf},
    string::{String, ToString},
    vec,
    vec::Vec,
};

/// The tree the tests read: `$CX4_KSRC`, else the project's cached 7.2 source, if present.
pub(crate) fn tree() -> Result<PathBuf, String> {
    const DEFAULT: &str = "/var/cache/cx4/kernel/src-7.2.12-1~bpo13+1";
    let (path, from) = match env::var_os("CX4_KSRC") {
        Some(p) => (PathBuf::from(p), "CX4_KSRC"),
        None => (PathBuf::from(DEFAULT), "the default path"),
    };
    if path.join(IFC_HEADERS[1]).is_file() {
        Ok(path)
    } else {
        Err(format!(
            "skipped: no kernel source tree at {} ({from}); set CX4_KSRC to check against \
             mlx5_ifc.h",
            path.display()
        ))
    }
}

/// Files holding `mlx5_ifc_*_bits` definitions, relative to the tree.
pub(crate) const IFC_HEADERS: &[&str] = &[
    "include/linux/mlx5/mlx5_ifc_fpga.h",
    "include/linux/mlx5/mlx5_ifc.h",
    "drivers/net/ethernet/mellanox/mlx5/core/cmd.c",
];

/// Files whose enums and `#define`s the constant checks read, relative to the tree.
pub(crate) const CONST_FILES: &[&str] = &[
    "include/linux/mlx5/mlx5_ifc.h",
    "include/linux/mlx5/device.h",
    "include/linux/mlx5/driver.h",
    "include/linux/mlx5/cq.h",
    "include/linux/mlx5/qp.h",
    "include/linux/mlx5/doorbell.h",
    "include/linux/mlx5/fs.h",
    "include/linux/mlx5/vport.h",
    "include/linux/mlx5/port.h",
    "drivers/net/ethernet/mellanox/mlx5/core/cmd.c",
    "drivers/net/ethernet/mellanox/mlx5/core/eq.c",
    "drivers/net/ethernet/mellanox/mlx5/core/pagealloc.c",
    "drivers/net/ethernet/mellanox/mlx5/core/fw.c",
    "drivers/net/ethernet/mellanox/mlx5/core/main.c",
    "drivers/infiniband/hw/mlx5/cong.c",
];

/// Reads the given files of `root` and concatenates them.
pub(crate) fn read_all(root: &Path, files: &[&str]) -> Result<String, String> {
    let mut s = String::new();
    for f in files {
        let p = root.join(f);
        s += &fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        s.push('\n');
    }
    Ok(s)
}

/// Removes comments, keeping string and character literals intact.
fn strip_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'/', Some(b'*')) => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    if b[i] == b'\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
                i += 2;
                out.push(' ');
            }
            (b'/', Some(b'/')) => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            (q @ (b'"' | b'\''), _) => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != q {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str(&src[start..i.min(b.len())]);
            }
            _ => {
                let c = src[i..].chars().next().unwrap_or(' ');
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// Splits comment-free source into preprocessor lines and the remaining code.
fn split_preprocessor(src: &str) -> (Vec<String>, String) {
    let mut directives = Vec::new();
    let mut code = String::new();
    let mut lines = src.lines();
    while let Some(line) = lines.next() {
        if line.trim_start().starts_with('#') {
            let mut d = line.to_string();
            while d.ends_with('\\') {
                d.pop();
                d += lines.next().unwrap_or("");
            }
            directives.push(d);
        } else {
            code += line;
            code.push('\n');
        }
    }
    (directives, code)
}

/// C tokens: identifiers, numbers, `<<`, `>>` and single punctuation characters.
fn tokenize(code: &str) -> Vec<String> {
    let mut toks = Vec::new();
    let cs: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let s = i;
            while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_') {
                i += 1;
            }
            toks.push(cs[s..i].iter().collect());
        } else if c == '"' || c == '\'' {
            let s = i;
            i += 1;
            while i < cs.len() && cs[i] != c {
                i += if cs[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            toks.push(cs[s..i.min(cs.len())].iter().collect());
        } else if (c == '<' || c == '>') && cs.get(i + 1) == Some(&c) {
            toks.push(format!("{c}{c}"));
            i += 2;
        } else {
            toks.push(c.to_string());
            i += 1;
        }
    }
    toks
}

/// Parses a C integer literal (`0x1f`, `12`, `0X4`, with `U`/`L` suffixes).
fn parse_int(t: &str) -> Option<i64> {
    let t = t.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

/// The numeric constants of a set of C sources.
pub(crate) struct Consts {
    /// Evaluated or conflicting (`None`) values.
    values: RefCell<HashMap<String, Option<i64>>>,
    /// Raw tokens of object-like `#define`s, evaluated on demand.
    defines: HashMap<String, Vec<String>>,
}

impl Consts {
    /// Collects the enums and object-like `#define`s of `src`.
    pub(crate) fn parse(src: &str) -> Consts {
        let (directives, code) = split_preprocessor(&strip_comments(src));
        let mut defines: HashMap<String, Vec<String>> = HashMap::new();
        let mut conflicting = Vec::new();
        for d in directives {
            let toks = tokenize(d.trim_start().trim_start_matches('#'));
            if toks.len() < 3 || toks[0] != "define" {
                continue;
            }
            // A function-like macro has `(` right after its name, without a space.
            let name = &toks[1];
            if d.contains(&format!("{name}(")) {
                continue;
            }
            let body = toks[2..].to_vec();
            match defines.get(name) {
                Some(old) if *old != body => conflicting.push(name.clone()),
                _ => {
                    defines.insert(name.clone(), body);
                }
            }
        }
        let c = Consts {
            values: RefCell::new(conflicting.into_iter().map(|n| (n, None)).collect()),
            defines,
        };
        let toks = tokenize(&code);
        let mut i = 0;
        while i < toks.len() {
            if toks[i] == "enum" {
                let mut j = i + 1;
                if toks.get(j).is_some_and(|t| t != "{") {
                    j += 1;
                }
                if toks.get(j).is_some_and(|t| t == "{") {
                    i = c.parse_enum(&toks, j + 1);
                    continue;
                }
            }
            i += 1;
        }
        c
    }

    /// Records the entries of an enum body starting at `i`; returns the index after it.
    fn parse_enum(&self, toks: &[String], mut i: usize) -> usize {
        let mut next = Some(0i64);
        while i < toks.len() && toks[i] != "}" {
            let name = toks[i].clone();
            i += 1;
            let value = if toks.get(i).is_some_and(|t| t == "=") {
                let s = i + 1;
                let mut depth = 0;
                i = s;
                while i < toks.len() && !(depth == 0 && (toks[i] == "," || toks[i] == "}")) {
                    depth += match toks[i].as_str() {
                        "(" => 1,
                        ")" => -1,
                        _ => 0,
                    };
                    i += 1;
                }
                self.eval(&toks[s..i], 0)
            } else {
                next
            };
            self.insert(name, value);
            next = value.map(|v| v + 1);
            if toks.get(i).is_some_and(|t| t == ",") {
                i += 1;
            }
        }
        i + 1
    }

    fn insert(&self, name: String, v: Option<i64>) {
        let mut values = self.values.borrow_mut();
        match values.get(&name) {
            Some(old) if *old != v => {
                values.insert(name, None);
            }
            _ => {
                values.insert(name, v);
            }
        }
    }

    /// The value of a constant, `None` if unknown, not a constant expression, or defined
    /// twice with different values.
    pub(crate) fn get(&self, name: &str) -> Option<i64> {
        self.lookup(name, 0)
    }

    fn lookup(&self, name: &str, depth: u32) -> Option<i64> {
        if let Some(v) = self.values.borrow().get(name) {
            return *v;
        }
        let body = self.defines.get(name)?;
        let v = self.eval(body, depth + 1);
        self.values.borrow_mut().insert(name.to_string(), v);
        v
    }

    /// Evaluates a constant expression.
    fn eval(&self, toks: &[String], depth: u32) -> Option<i64> {
        if depth > 16 {
            return None;
        }
        let mut p = Expr {
            toks,
            pos: 0,
            consts: self,
            depth,
        };
        let v = p.or()?;
        (p.pos == toks.len()).then_some(v)
    }
}

/// Recursive-descent evaluator for C constant expressions.
struct Expr<'a> {
    toks: &'a [String],
    pos: usize,
    consts: &'a Consts,
    depth: u32,
}

impl Expr<'_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(String::as_str)
    }

    fn eat(&mut self, t: &str) -> bool {
        let hit = self.peek() == Some(t);
        self.pos += usize::from(hit);
        hit
    }

    fn or(&mut self) -> Option<i64> {
        let mut v = self.and()?;
        while self.eat("|") {
            v |= self.and()?;
        }
        Some(v)
    }

    fn and(&mut self) -> Option<i64> {
        let mut v = self.shift()?;
        while self.eat("&") {
            v &= self.shift()?;
        }
        Some(v)
    }

    fn shift(&mut self) -> Option<i64> {
        let mut v = self.add()?;
        loop {
            if self.eat("<<") {
                v = v.checked_shl(u32::try_from(self.add()?).ok()?)?;
            } else if self.eat(">>") {
                v = v.checked_shr(u32::try_from(self.add()?).ok()?)?;
            } else {
                return Some(v);
            }
        }
    }

    fn add(&mut self) -> Option<i64> {
        let mut v = self.mul()?;
        loop {
            if self.eat("+") {
                v = v.checked_add(self.mul()?)?;
            } else if self.eat("-") {
                v = v.checked_sub(self.mul()?)?;
            } else {
                return Some(v);
            }
        }
    }

    fn mul(&mut self) -> Option<i64> {
        let mut v = self.unary()?;
        while self.eat("*") {
            v = v.checked_mul(self.unary()?)?;
        }
        Some(v)
    }

    fn unary(&mut self) -> Option<i64> {
        if self.eat("-") {
            return self.unary().map(|v| -v);
        }
        if self.eat("~") {
            return self.unary().map(|v| !v);
        }
        if self.eat("(") {
            let v = self.or()?;
            return self.eat(")").then_some(v);
        }
        let t = self.peek()?.to_string();
        self.pos += 1;
        if t == "BIT" && self.eat("(") {
            let n = self.or()?;
            return self.eat(")").then(|| 1i64 << n);
        }
        parse_int(&t).or_else(|| self.consts.lookup(&t, self.depth + 1))
    }
}

/// One array dimension of a member.
#[derive(Clone, Debug)]
enum Dim {
    /// A literal.
    Num(u64),
    /// A named constant.
    Sym(String),
    /// `[]` or `[0]`: a flexible array.
    Flex,
}

/// A member of a `mlx5_ifc_*_bits` definition.
#[derive(Clone, Debug)]
enum Member {
    /// `u8 name[...]...`: a bit field (first dimension) or array of bit fields.
    Bits { name: String, dims: Vec<Dim> },
    /// `struct|union mlx5_ifc_T_bits name[...]`.
    Typed {
        name: String,
        ty: String,
        dims: Vec<Dim>,
    },
    /// An anonymous (or named inline) `struct { ... }` / `union { ... }`.
    Inline { name: Option<String>, def: Box<Def> },
}

/// A parsed `struct`/`union mlx5_ifc_<name>_bits` body.
#[derive(Clone, Debug)]
struct Def {
    union: bool,
    members: Vec<Member>,
}

/// All `mlx5_ifc_*_bits` definitions of a set of sources, with layout computations. A
/// definition the parser does not understand is kept as its error, reported only if a checked
/// layout needs it.
pub(crate) struct Ifc {
    defs: HashMap<String, Result<Def, String>>,
    consts: Consts,
    sizes: RefCell<HashMap<String, Result<u64, String>>>,
}

/// A field as placed by the header: bit offset and bit width.
pub(crate) type Placement = (u64, u64);

impl Ifc {
    /// Parses every `mlx5_ifc_*_bits` definition of `src`.
    pub(crate) fn parse(src: &str) -> Result<Ifc, String> {
        let consts = Consts::parse(src);
        let (_, code) = split_preprocessor(&strip_comments(src));
        let toks = tokenize(&code);
        let mut defs = HashMap::new();
        let mut i = 0;
        while i + 2 < toks.len() {
            let is_def = (toks[i] == "struct" || toks[i] == "union")
                && toks[i + 2] == "{"
                && ifc_name(&toks[i + 1]).is_some();
            if !is_def {
                i += 1;
                continue;
            }
            let name = ifc_name(&toks[i + 1]).unwrap_or_default().to_string();
            let parsed = parse_body(&toks, i + 2, toks[i] == "union");
            let next = match &parsed {
                Ok((_, next)) => *next,
                Err(_) => skip_braces(&toks, i + 2),
            };
            let prev = defs.insert(name.clone(), parsed.map(|(def, _)| def));
            if prev.is_some() {
                return Err(format!("mlx5_ifc_{name}_bits is defined twice"));
            }
            i = next;
        }
        Ok(Ifc {
            defs,
            consts,
            sizes: RefCell::new(HashMap::new()),
        })
    }

    /// The definition of `mlx5_ifc_<name>_bits`.
    fn def(&self, name: &str) -> Result<&Def, String> {
        match self.defs.get(name) {
            Some(Ok(def)) => Ok(def),
            Some(Err(e)) => Err(format!("mlx5_ifc_{name}_bits: {e}")),
            None => Err(format!("mlx5_ifc_{name}_bits is not defined")),
        }
    }

    /// Number of parsed definitions.
    pub(crate) fn len(&self) -> usize {
        self.defs.len()
    }

    /// Whether `mlx5_ifc_<name>_bits` is defined and understood.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.def(name).is_ok()
    }

    /// Definitions the parser could not read, with the reason.
    pub(crate) fn unparsed(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .defs
            .iter()
            .filter_map(|(n, d)| d.as_ref().err().map(|e| format!("{n}: {e}")))
            .collect();
        v.sort();
        v
    }

    /// Size in bits of `mlx5_ifc_<name>_bits`.
    pub(crate) fn size(&self, name: &str) -> Result<u64, String> {
        if let Some(s) = self.sizes.borrow().get(name) {
            return s.clone();
        }
        let s = self.def(name).and_then(|def| self.def_size(def));
        self.sizes.borrow_mut().insert(name.to_string(), s.clone());
        s
    }

    fn def_size(&self, def: &Def) -> Result<u64, String> {
        let mut total = 0;
        for m in &def.members {
            let w = self.member_width(m)?;
            total = if def.union { total.max(w) } else { total + w };
        }
        Ok(total)
    }

    fn dims(&self, dims: &[Dim]) -> Result<u64, String> {
        dims.iter().try_fold(1u64, |acc, d| {
            Ok(acc
                * match d {
                    Dim::Num(n) => *n,
                    Dim::Flex => 0,
                    Dim::Sym(s) => self
                        .consts
                        .get(s)
                        .and_then(|v| u64::try_from(v).ok())
                        .ok_or_else(|| format!("array size {s} is not a known constant"))?,
                })
        })
    }

    fn member_width(&self, m: &Member) -> Result<u64, String> {
        match m {
            Member::Bits { dims, .. } => self.dims(dims),
            Member::Typed { ty, dims, .. } => Ok(self.size(ty)? * self.dims(dims)?),
            Member::Inline { def, .. } => self.def_size(def),
        }
    }

    /// Every field of `mlx5_ifc_<name>_bits` by name, with members of anonymous structs and
    /// unions flattened into it (as C does) and `x[]` entries giving the element width of
    /// arrays.
    pub(crate) fn fields(&self, name: &str) -> Result<HashMap<String, Placement>, String> {
        let mut out = HashMap::new();
        self.collect(self.def(name)?, 0, &mut out)?;
        Ok(out)
    }

    fn collect(
        &self,
        def: &Def,
        base: u64,
        out: &mut HashMap<String, Placement>,
    ) -> Result<(), String> {
        let mut off = base;
        for m in &def.members {
            let w = self.member_width(m)?;
            match m {
                Member::Bits { name, dims } => {
                    out.insert(name.clone(), (off, w));
                    if dims.len() > 1 {
                        out.insert(format!("{name}[]"), (off, self.dims(&dims[1..])?));
                    }
                }
                Member::Typed { name, ty, dims } => {
                    out.insert(name.clone(), (off, w));
                    if !dims.is_empty() {
                        out.insert(format!("{name}[]"), (off, self.size(ty)?));
                    }
                }
                Member::Inline { name: Some(n), .. } => {
                    out.insert(n.clone(), (off, w));
                }
                Member::Inline { name: None, def } => self.collect(def, off, out)?,
            }
            if !def.union {
                off += w;
            }
        }
        Ok(())
    }
}

/// `mlx5_ifc_<name>_bits` (or `mlx5_ifc_<name>`, as some unions are spelled) → `<name>`.
fn ifc_name(tok: &str) -> Option<&str> {
    let t = tok.strip_prefix("mlx5_ifc_")?;
    Some(t.strip_suffix("_bits").unwrap_or(t))
}

/// Index after the `}` matching the `{` at `i`.
fn skip_braces(toks: &[String], i: usize) -> usize {
    let mut depth = 0;
    for (j, t) in toks.iter().enumerate().skip(i) {
        match t.as_str() {
            "{" => depth += 1,
            "}" if depth == 1 => return j + 1,
            "}" => depth -= 1,
            _ => {}
        }
    }
    toks.len()
}

/// Parses `[N][M]...` at `i`; returns the dimensions and the index after them.
fn parse_dims(toks: &[String], mut i: usize) -> Result<(Vec<Dim>, usize), String> {
    let mut dims = Vec::new();
    while toks.get(i).is_some_and(|t| t == "[") {
        let close = toks[i..]
            .iter()
            .position(|t| t == "]")
            .ok_or("unterminated [")?
            + i;
        dims.push(match &toks[i + 1..close] {
            [] => Dim::Flex,
            [t] => match parse_int(t) {
                Some(0) => Dim::Flex,
                Some(n) => Dim::Num(n.unsigned_abs()),
                None => Dim::Sym(t.clone()),
            },
            other => return Err(format!("unsupported array size {other:?}")),
        });
        i = close + 1;
    }
    Ok((dims, i))
}

/// Expects token `t` at `i`.
fn expect(toks: &[String], i: usize, t: &str) -> Result<usize, String> {
    if toks.get(i).is_some_and(|x| x == t) {
        Ok(i + 1)
    } else {
        let ctx = toks[i.saturating_sub(6)..(i + 6).min(toks.len())].join(" ");
        Err(format!("expected `{t}` near `{ctx}`"))
    }
}

/// Parses a definition body starting at its `{`; returns it and the index after its `}`.
fn parse_body(toks: &[String], i: usize, union: bool) -> Result<(Def, usize), String> {
    let mut i = expect(toks, i, "{")?;
    let mut members = Vec::new();
    while toks.get(i).is_some_and(|t| t != "}") {
        let t = toks[i].as_str();
        match t {
            "u8" => {
                let name = toks.get(i + 1).ok_or("truncated member")?.clone();
                let (dims, j) = parse_dims(toks, i + 2)?;
                if dims.is_empty() {
                    return Err(format!("u8 {name} has no bit width"));
                }
                members.push(Member::Bits { name, dims });
                i = expect(toks, j, ";")?;
            }
            "struct" | "union" if toks.get(i + 1).is_some_and(|x| x == "{") => {
                let (def, j) = parse_body(toks, i + 1, t == "union")?;
                let (name, j) = match toks.get(j) {
                    Some(n) if n != ";" => (Some(n.clone()), j + 1),
                    _ => (None, j),
                };
                members.push(Member::Inline {
                    name,
                    def: Box::new(def),
                });
                i = expect(toks, j, ";")?;
            }
            "struct" | "union" => {
                let ty = toks.get(i + 1).and_then(|x| ifc_name(x));
                let ty = ty.ok_or_else(|| format!("member type {:?}", toks.get(i + 1)))?;
                let name = toks.get(i + 2).ok_or("truncated member")?.clone();
                let (dims, j) = parse_dims(toks, i + 3)?;
                members.push(Member::Typed {
                    name,
                    ty: ty.to_string(),
                    dims,
                });
                i = expect(toks, j, ";")?;
            }
            "DECLARE_FLEX_ARRAY" => {
                // DECLARE_FLEX_ARRAY ( struct T , name ) ;
                let j = expect(toks, i + 1, "(")?;
                let ty = toks.get(j + 1).and_then(|x| ifc_name(x));
                let ty = ty.ok_or("DECLARE_FLEX_ARRAY of a non-ifc type")?;
                let j = expect(toks, j + 2, ",")?;
                let name = toks.get(j).ok_or("truncated DECLARE_FLEX_ARRAY")?.clone();
                let j = expect(toks, j + 1, ")")?;
                members.push(Member::Typed {
                    name,
                    ty: ty.to_string(),
                    dims: vec![Dim::Flex],
                });
                i = expect(toks, j, ";")?;
            }
            _ => {
                let ctx = toks[i..(i + 8).min(toks.len())].join(" ");
                return Err(format!("unsupported member `{ctx}`"));
            }
        }
    }
    let i = expect(toks, i, "}")?;
    Ok((Def { union, members }, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
        /* a comment with struct mlx5_ifc_fake_bits { */
        #define N_ENTRIES 2
        enum { A = 0x10, B, C = BIT(3) | 1, D = (1 << 4) + A, };
        struct mlx5_ifc_inner_bits {
            u8         x[0x10];
            u8         reserved_at_10[0x10];
        };
        union mlx5_ifc_u_bits {
            struct mlx5_ifc_inner_bits inner;
            u8         reserved_at_0[0x40];
        };
        struct mlx5_ifc_outer_bits {
            u8         a[0x4];   // trailing comment
            u8         b[0x1c];
            struct mlx5_ifc_inner_bits two[N_ENTRIES];
            union mlx5_ifc_u_bits u;
            union {
                u8 anon_x[0x20];
                struct { u8 anon_y[0x8]; u8 anon_z[0x18]; };
            };
            u8         bytes[4][0x8];
            u8         pas[][0x40];
            DECLARE_FLEX_ARRAY(struct mlx5_ifc_inner_bits, tail);
        };
    "#;

    #[test]
    fn parser_places_fields_like_mlx5_get() {
        let ifc = Ifc::parse(SAMPLE).unwrap();
        assert!(!ifc.has("fake"));
        assert_eq!(ifc.size("inner"), Ok(0x20));
        assert_eq!(ifc.size("u"), Ok(0x40));
        assert_eq!(ifc.size("outer"), Ok(0x20 + 0x40 + 0x40 + 0x20 + 0x20));
        let f = ifc.fields("outer").unwrap();
        assert_eq!(f["a"], (0, 4));
        assert_eq!(f["b"], (4, 0x1c));
        assert_eq!(f["two"], (0x20, 0x40));
        assert_eq!(f["two[]"], (0x20, 0x20));
        assert_eq!(f["u"], (0x60, 0x40));
        assert_eq!(f["anon_x"], (0xa0, 0x20));
        assert_eq!(f["anon_y"], (0xa0, 0x8));
        assert_eq!(f["anon_z"], (0xa8, 0x18));
        assert_eq!(f["bytes"], (0xc0, 0x20));
        assert_eq!(f["bytes[]"], (0xc0, 0x8));
        assert_eq!(f["pas"], (0xe0, 0));
        assert_eq!(f["pas[]"], (0xe0, 0x40));
        assert_eq!(f["tail[]"], (0xe0, 0x20));
    }

    #[test]
    fn constants_follow_c_enum_and_define_rules() {
        let c = Consts::parse(SAMPLE);
        assert_eq!(c.get("A"), Some(0x10));
        assert_eq!(c.get("B"), Some(0x11));
        assert_eq!(c.get("C"), Some(9));
        assert_eq!(c.get("D"), Some(0x20));
        assert_eq!(c.get("N_ENTRIES"), Some(2));
        assert_eq!(c.get("missing"), None);
        let twice = Consts::parse("#define X 0\n#define X 0x80\n#define Y 1\n");
        assert_eq!(twice.get("X"), None);
        assert_eq!(twice.get("Y"), Some(1));
    }
}
