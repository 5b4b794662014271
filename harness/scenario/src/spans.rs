//! Where each value of a YAML document was written, by path (`spec.steps[2].expect.within`, the
//! same spelling serde_yaml uses in its errors).
//!
//! Why this approach: the typed model stays plain serde structs (schemars derives its JSON
//! Schema, the runner uses them directly), serde_yaml reports structural errors with their own
//! locations, and the semantic checks (anchors, node names, CEL, file references) find the
//! location of the value they reject here. Wrapping every field in a `Spanned<T>` (marked-yaml,
//! serde_spanned) would leak spans into every consumer and the schema. yaml-rust2's event parser
//! gives marks for every scalar, mapping and sequence, which is all this index needs.

use std::collections::HashMap;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    /// 1-based.
    pub line: usize,
    /// 1-based.
    pub col: usize,
}

#[derive(Default, Debug)]
pub struct Spans {
    values: HashMap<String, Pos>,
    keys: HashMap<String, Pos>,
}

impl Spans {
    pub fn parse(src: &str) -> Spans {
        let mut b = Builder::default();
        let mut parser = Parser::new_from_str(src);
        // A syntax error is reported by serde_yaml; the marks gathered so far stay usable.
        let _ = parser.load(&mut b, false);
        b.spans
    }

    /// The value at `path`, or the nearest ancestor that exists.
    pub fn value(&self, path: &str) -> Pos {
        let mut p = path.to_string();
        loop {
            if let Some(pos) = self.values.get(&p) {
                return *pos;
            }
            match parent(&p) {
                Some(q) => p = q,
                None => return Pos { line: 1, col: 1 },
            }
        }
    }

    /// The key of the entry at `path` (for "this field is wrong" messages), else its value.
    pub fn key(&self, path: &str) -> Pos {
        self.keys
            .get(path)
            .copied()
            .unwrap_or_else(|| self.value(path))
    }

    pub fn has(&self, path: &str) -> bool {
        self.values.contains_key(path)
    }
}

fn parent(p: &str) -> Option<String> {
    if p.is_empty() {
        return None;
    }
    if p.ends_with(']') {
        if let Some(i) = p.rfind('[') {
            return Some(p[..i].to_string());
        }
    }
    match p.rfind('.') {
        Some(i) => Some(p[..i].to_string()),
        None => Some(String::new()),
    }
}

enum Frame {
    Map { path: String, key: Option<String> },
    Seq { path: String, index: usize },
}

#[derive(Default)]
struct Builder {
    spans: Spans,
    stack: Vec<Frame>,
    done: bool,
}

fn join(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_string()
    } else {
        format!("{base}.{key}")
    }
}

impl Builder {
    /// The path of the value now starting, or None when the event is a mapping key.
    fn value_path(&mut self, scalar: Option<&str>, mark: Pos) -> Option<String> {
        match self.stack.last_mut() {
            None => Some(String::new()),
            Some(Frame::Seq { path, index }) => {
                let p = format!("{path}[{index}]");
                *index += 1;
                Some(p)
            }
            Some(Frame::Map { path, key }) => match key.take() {
                Some(k) => Some(join(path, &k)),
                None => {
                    let k = scalar.unwrap_or("?").to_string();
                    // yaml-rust2 marks a block mapping where its first `:` is; the mapping
                    // starts at its first key.
                    if let Some(m) = self.spans.values.get_mut(path.as_str()) {
                        if (mark.line, mark.col) < (m.line, m.col) {
                            *m = mark;
                        }
                    }
                    self.spans.keys.insert(join(path, &k), mark);
                    *key = Some(k);
                    None
                }
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, m: Marker) {
        if self.done {
            return;
        }
        let pos = Pos {
            line: m.line(),
            col: m.col() + 1,
        };
        match ev {
            Event::Scalar(s, ..) => {
                if let Some(p) = self.value_path(Some(&s), pos) {
                    self.spans.values.insert(p, pos);
                }
            }
            Event::Alias(_) => {
                if let Some(p) = self.value_path(Some("*"), pos) {
                    self.spans.values.insert(p, pos);
                }
            }
            Event::MappingStart(..) => {
                if let Some(p) = self.value_path(None, pos) {
                    self.spans.values.insert(p.clone(), pos);
                    self.stack.push(Frame::Map { path: p, key: None });
                } else {
                    // A complex key: track it as an anonymous map.
                    self.stack.push(Frame::Map {
                        path: "?".into(),
                        key: None,
                    });
                }
            }
            Event::SequenceStart(..) => {
                if let Some(p) = self.value_path(None, pos) {
                    self.spans.values.insert(p.clone(), pos);
                    self.stack.push(Frame::Seq { path: p, index: 0 });
                } else {
                    self.stack.push(Frame::Seq {
                        path: "?".into(),
                        index: 0,
                    });
                }
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
            }
            Event::DocumentEnd => self.done = true,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_serde_yaml_spelling() {
        let src = "a: 1\nspec:\n  steps:\n    - sleep: 1s\n    - expect:\n        within: 3s\n";
        let s = Spans::parse(src);
        assert_eq!(s.value("a"), Pos { line: 1, col: 4 });
        assert_eq!(
            s.key("spec.steps[1].expect.within"),
            Pos { line: 6, col: 9 }
        );
        assert_eq!(
            s.value("spec.steps[1].expect.within"),
            Pos { line: 6, col: 17 }
        );
        assert_eq!(s.value("spec.steps[0]"), Pos { line: 4, col: 7 });
        // Missing paths fall back to the nearest ancestor.
        assert_eq!(
            s.value("spec.steps[1].expect.nope"),
            Pos { line: 6, col: 9 }
        );
    }
}
