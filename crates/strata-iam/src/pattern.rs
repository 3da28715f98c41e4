//! Compiled wildcard patterns, the matcher behind `Action`, `Resource`, `StringLike` and
//! `ArnLike`: `*` matches any run of characters (possibly empty), `?` exactly one character,
//! and `${key}` the single value of a condition key of the request (a policy variable).
//!
//! A pattern is compiled once into atoms (literal runs, variables, `*`, `?`); matching walks the
//! text once with one remembered `*` to fall back to, so it never allocates and costs at most
//! O(pattern × text). Only the latest `*` needs remembering: the atoms between two stars have a
//! fixed length, so matching them at their leftmost place never loses a match.

/// Where a pattern takes the values of its `${...}` variables from.
pub trait Variables {
    /// The single value of a condition key (normalized with [`crate::normalize_key`]), or
    /// `None` when the request has no value or several (a multi-valued key is no variable).
    fn variable(&self, key: &str) -> Option<&str>;
}

/// No variables at all.
pub struct NoVariables;

impl Variables for NoVariables {
    fn variable(&self, _key: &str) -> Option<&str> {
        None
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Atom {
    Literal(Box<str>),
    /// A condition key, normalized.
    Variable(Box<str>),
    Any,
    One,
}

/// What a pattern's text may contain.
#[derive(Debug, Clone, Copy)]
pub struct Syntax {
    /// `*` and `?` are wildcards (else plain characters).
    pub wildcards: bool,
    /// `${key}` is a variable, `${*}`, `${?}`, `${$}` escape the three (else plain text).
    pub variables: bool,
    /// Literals match ignoring ASCII case.
    pub ignore_case: bool,
}

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    atoms: Box<[Atom]>,
    ignore_case: bool,
}

impl Pattern {
    /// Compiles `text`; the error says what is wrong with it.
    pub fn compile(text: &str, syntax: Syntax) -> Result<Pattern, String> {
        let mut atoms: Vec<Atom> = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if syntax.variables && rest.starts_with("${") {
                let end =
                    rest.find('}').ok_or_else(|| format!("unterminated policy variable in {text:?}"))?;
                let name = &rest[2..end];
                rest = &rest[end + 1..];
                match name {
                    "*" | "?" | "$" => literal.push_str(name),
                    _ => {
                        check_variable_name(name)?;
                        flush(&mut literal, &mut atoms);
                        atoms.push(Atom::Variable(crate::normalize_key(name).into()));
                    }
                }
                continue;
            }
            rest = &rest[c.len_utf8()..];
            match c {
                '*' if syntax.wildcards => {
                    flush(&mut literal, &mut atoms);
                    if atoms.last() != Some(&Atom::Any) {
                        atoms.push(Atom::Any);
                    }
                }
                '?' if syntax.wildcards => {
                    flush(&mut literal, &mut atoms);
                    atoms.push(Atom::One);
                }
                c => literal.push(c),
            }
        }
        flush(&mut literal, &mut atoms);
        Ok(Pattern { atoms: atoms.into(), ignore_case: syntax.ignore_case })
    }

    /// True when the pattern is `*` alone (matches everything).
    pub fn is_any(&self) -> bool {
        matches!(&*self.atoms, [Atom::Any])
    }

    /// True when the pattern is plain text: no wildcard and no variable.
    pub fn is_literal(&self) -> bool {
        self.atoms.iter().all(|a| matches!(a, Atom::Literal(_)))
    }

    /// True when the pattern names a policy variable.
    pub fn has_variables(&self) -> bool {
        self.atoms.iter().any(|a| matches!(a, Atom::Variable(_)))
    }

    /// Does `text` match? A variable the request has no single value for matches nothing.
    pub fn matches(&self, text: &str, vars: &dyn Variables) -> bool {
        let atoms = &self.atoms;
        let (mut atom_index, mut at) = (0usize, 0usize);
        // After the latest `*`: (index of the atom following it, where in the text it resumes).
        let mut star: Option<(usize, usize)> = None;
        loop {
            let advanced = match atoms.get(atom_index) {
                None if at == text.len() => return true,
                None => None,
                Some(Atom::Any) => {
                    if atom_index + 1 == atoms.len() {
                        return true; // a trailing `*` takes whatever is left
                    }
                    star = Some((atom_index + 1, at));
                    atom_index += 1;
                    continue;
                }
                Some(Atom::One) => text[at..].chars().next().map(char::len_utf8),
                Some(Atom::Literal(l)) => self.prefix(&text[at..], l),
                Some(Atom::Variable(key)) => match vars.variable(key) {
                    Some(value) => self.prefix(&text[at..], value),
                    None => return false,
                },
            };
            match (advanced, star) {
                (Some(n), _) => {
                    at += n;
                    atom_index += 1;
                }
                (None, Some((resume, from))) => {
                    // Let the `*` take one more character and try again from there.
                    let Some(c) = text[from..].chars().next() else { return false };
                    let next = from + c.len_utf8();
                    star = Some((resume, next));
                    atom_index = resume;
                    at = next;
                }
                (None, None) => return false,
            }
        }
    }

    /// The length of `literal` when `text` starts with it.
    fn prefix(&self, text: &str, literal: &str) -> Option<usize> {
        let (t, l) = (text.as_bytes(), literal.as_bytes());
        let head = t.get(..l.len())?;
        let same = if self.ignore_case { head.eq_ignore_ascii_case(l) } else { head == l };
        // Equal bytes of valid UTF-8 end on a character boundary of `text` too.
        same.then_some(l.len())
    }
}

fn flush(literal: &mut String, atoms: &mut Vec<Atom>) {
    if !literal.is_empty() {
        atoms.push(Atom::Literal(std::mem::take(literal).into()));
    }
}

fn check_variable_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.contains(':')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_:/.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid policy variable ${{{name}}}: expected a condition key such as ${{aws:username}}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const GLOB: Syntax = Syntax { wildcards: true, variables: true, ignore_case: false };

    struct Map(HashMap<&'static str, &'static str>);
    impl Variables for Map {
        fn variable(&self, key: &str) -> Option<&str> {
            self.0.get(key).copied()
        }
    }

    fn m(pattern: &str, text: &str) -> bool {
        Pattern::compile(pattern, GLOB).expect("pattern").matches(text, &NoVariables)
    }

    #[test]
    fn wildcards() {
        assert!(m("*", ""));
        assert!(m("*", "anything/at/all"));
        assert!(m("arn:aws:s3:::b/*", "arn:aws:s3:::b/"));
        assert!(m("arn:aws:s3:::b/*", "arn:aws:s3:::b/x/y"));
        assert!(!m("arn:aws:s3:::b/*", "arn:aws:s3:::b"));
        assert!(!m("arn:aws:s3:::b/*", "arn:aws:s3:::bb/x"));
        assert!(m("a?c", "abc"));
        assert!(m("a?c", "aéc"), "? is one character, not one byte");
        assert!(!m("a?c", "ac"));
        assert!(!m("a?c", "abbc"));
        assert!(m("*a*b*c*", "xxaxxbxxcxx"));
        assert!(!m("*a*b*c", "xxaxxbxxcx"));
        assert!(m("a*b*b", "abbbb"));
        assert!(m("**", "x"));
        assert!(!m("", "x"));
        assert!(m("", ""));
        assert!(!m("abc", "ab"));
    }

    #[test]
    fn case() {
        let p = Pattern::compile("s3:Get*", Syntax { ignore_case: true, ..GLOB }).expect("pattern");
        assert!(p.matches("S3:GETOBJECT", &NoVariables));
        assert!(!m("s3:Get*", "s3:getobject"));
    }

    #[test]
    fn variables_and_escapes() {
        let vars = Map(HashMap::from([("aws:username", "alice"), ("s3:prefix", "a*b")]));
        let p = Pattern::compile("arn:aws:s3:::home/${aws:username}/*", GLOB).expect("pattern");
        assert!(p.matches("arn:aws:s3:::home/alice/x", &vars));
        assert!(!p.matches("arn:aws:s3:::home/bob/x", &vars));
        assert!(!p.matches("arn:aws:s3:::home/alice/x", &NoVariables), "a missing variable matches nothing");
        // A variable's value is plain text: its `*` is no wildcard.
        let p = Pattern::compile("${s3:prefix}", GLOB).expect("pattern");
        assert!(p.matches("a*b", &vars) && !p.matches("axxb", &vars));
        // Key names are case-insensitive.
        let p = Pattern::compile("${AWS:UserName}", GLOB).expect("pattern");
        assert!(p.matches("alice", &vars));
        let p = Pattern::compile("a${*}b${?}c${$}", GLOB).expect("pattern");
        assert!(p.matches("a*b?c$", &NoVariables));
        assert!(!p.matches("axb?c$", &NoVariables));
        let literal = Syntax { wildcards: false, variables: false, ignore_case: false };
        let p = Pattern::compile("${aws:username}*", literal).expect("pattern");
        assert!(p.matches("${aws:username}*", &NoVariables));
        assert!(Pattern::compile("a${aws:username", GLOB).is_err());
        assert!(Pattern::compile("${}", GLOB).is_err());
        assert!(Pattern::compile("${username, 'x'}", GLOB).is_err());
    }

    /// The definition, written as plainly as possible: the reference for the property test.
    fn reference(pattern: &[char], text: &[char]) -> bool {
        match pattern.split_first() {
            None => text.is_empty(),
            Some(('*', rest)) => (0..=text.len()).any(|i| reference(rest, &text[i..])),
            Some(('?', rest)) => !text.is_empty() && reference(rest, &text[1..]),
            Some((c, rest)) => text.first() == Some(c) && reference(rest, &text[1..]),
        }
    }

    /// xorshift64*: deterministic inputs, no dependency.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n as u64) as usize
        }
        fn string(&mut self, alphabet: &[char], len_max: usize) -> String {
            let len = self.below(len_max + 1);
            (0..len).map(|_| alphabet[self.below(alphabet.len())]).collect()
        }
    }

    /// Property: the compiled matcher agrees with the reference on random patterns and texts
    /// over a small alphabet (so matches are frequent). `STRATA_PROPTEST_CASES` sets the count.
    #[test]
    fn compiled_matcher_agrees_with_reference() {
        let cases: usize =
            std::env::var("STRATA_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut matched, mut refused) = (0, 0);
        for _ in 0..cases {
            let pattern = rng.string(&['a', 'b', 'é', '*', '?'], 8);
            let text = rng.string(&['a', 'b', 'é'], 10);
            let want = reference(&pattern.chars().collect::<Vec<_>>(), &text.chars().collect::<Vec<_>>());
            let compiled = Pattern::compile(&pattern, GLOB).expect("pattern");
            assert_eq!(compiled.matches(&text, &NoVariables), want, "pattern {pattern:?} text {text:?}");
            if want {
                matched += 1;
            } else {
                refused += 1;
            }
        }
        assert!(matched > cases / 20 && refused > cases / 20, "{matched} matched, {refused} refused");
    }
}
