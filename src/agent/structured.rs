//! The request of an extraction skill (docs/extract.md): one direct request whose answer is a
//! JSON object, shaped by the server where it can (`response_format`), validated against the
//! skill's schema; an invalid answer gets one corrective request quoting what is wrong, then
//! the job fails with `invalid_output`.

use super::runner::{AgentEnv, AgentStats, DirectAsk, keep_rejected, request};
use crate::error::{ErrorKind, JobError};
use crate::llm::Message;
use crate::skills::schema::{self, Field};
use serde_json::{Value, json};
use std::collections::HashSet;

/// An extraction job's schema, compiled.
pub(crate) struct Schema {
    pub value: Value,
    pub fields: Vec<Field>,
    validator: jsonschema::Validator,
}

impl Schema {
    pub(crate) fn new(value: Value) -> Result<Schema, String> {
        schema::check(&value)?;
        let validator = jsonschema::validator_for(&value)
            .map_err(|e| format!("not a valid JSON Schema: {e}"))?;
        Ok(Schema {
            fields: schema::fields(&value),
            value,
            validator,
        })
    }

    /// What is wrong with `answer` (at most five reasons), or the object it holds. A number
    /// written as text where the schema wants a number (`"1,130.00"`, `"¥2938"`) is read as
    /// the number first.
    pub(crate) fn parse(&self, answer: &str) -> Result<Value, Vec<String>> {
        let Some(mut value) = json_object(answer) else {
            return Err(vec!["the answer is not a JSON object".to_string()]);
        };
        coerce_numbers(&self.value, &mut value);
        let mut echoes = self.echoed_descriptions(&value);
        let errors: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                let what = crate::sanitize::one_line(&e.to_string());
                if at.is_empty() {
                    what
                } else {
                    format!("{at}: {what}")
                }
            })
            .chain(echoes.drain(..))
            .collect();
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(errors)
        }
    }

    /// Fields whose value is the field's own description or name, handed back from the prompt
    /// (`"challenge": "The problem the paper addresses"`): not a value from the document.
    fn echoed_descriptions(&self, value: &Value) -> Vec<String> {
        let norm = |s: &str| -> String {
            s.chars()
                .filter(|c| c.is_alphanumeric())
                .flat_map(char::to_lowercase)
                .collect()
        };
        let mut out = Vec::new();
        for f in &self.fields {
            let Some(Value::String(v)) = schema::at(value, &f.path) else {
                continue;
            };
            let v = norm(v);
            let echoed = !v.is_empty()
                && (v == norm(&f.path) || f.description.as_deref().is_some_and(|d| norm(d) == v));
            if echoed {
                let path = f.path.replace('.', "/");
                out.push(format!(
                    "/{path}: the field's description was given as its value; give the value the document states"
                ));
            }
        }
        out
    }

    /// What the server is asked to enforce. llama.cpp, vLLM and Ollama take the schema (as a
    /// grammar); OpenAI takes it too, strict where the schema allows; other providers (Zhipu
    /// among them) take `json_object`.
    pub(crate) fn response_format(&self, server_kind: Option<&str>, base_url: &str) -> Value {
        let openai = reqwest::Url::parse(base_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .is_some_and(|h| h == "api.openai.com");
        if matches!(server_kind, Some("llama.cpp" | "vllm" | "ollama")) || openai {
            let mut schema = if openai {
                self.value.clone()
            } else {
                numbers_as_text(&self.value)
            };
            // zhi's own annotations (`x-labels`) are not the server's business.
            drop_annotations(&mut schema);
            let mut format = json!({"name": "extraction", "schema": schema});
            if openai && schema::strict_ok(&self.value) {
                format["strict"] = Value::Bool(true);
            }
            json!({"type": "json_schema", "json_schema": format})
        } else {
            json!({"type": "json_object"})
        }
    }
}

/// `schema` without the keywords that begin with `x-`, in it and its subschemas (a property
/// of that name stays).
fn drop_annotations(schema: &mut Value) {
    let Value::Object(m) = schema else {
        return;
    };
    m.retain(|k, _| !k.starts_with("x-"));
    for (k, v) in m.iter_mut() {
        match (k.as_str(), v) {
            ("properties" | "$defs" | "definitions", Value::Object(props)) => {
                props.values_mut().for_each(drop_annotations);
            }
            (_, Value::Array(items)) => items.iter_mut().for_each(drop_annotations),
            (_, v @ Value::Object(_)) => drop_annotations(v),
            _ => {}
        }
    }
}

/// Does a schema's `type` allow a number (or an integer)?
fn wants_number(schema: &Value) -> Option<bool> {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    if types.contains(&"string") {
        return None;
    }
    if types.contains(&"number") {
        Some(false)
    } else if types.contains(&"integer") {
        Some(true)
    } else {
        None
    }
}

/// What a number asked for as text may look like: digits with the separators a document
/// writes them with.
const NUMBER_AS_TEXT: &str = "^-?[0-9][0-9,. ]*$";

/// The schema with every number (or integer) asked for as text, for a server's grammar: a
/// grammar that forces a JSON number cuts `1,130.00` at its comma, while text takes the figure
/// as the document writes it, and zhi reads it as the number ([`coerce_numbers`]).
fn numbers_as_text(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                let v = match k.as_str() {
                    "properties" => Value::Object(
                        v.as_object()
                            .map(|props| {
                                props
                                    .iter()
                                    .map(|(n, p)| (n.clone(), numbers_as_text(p)))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    ),
                    "items" => numbers_as_text(v),
                    _ => v.clone(),
                };
                out.insert(k.clone(), v);
            }
            if wants_number(schema).is_some() {
                let nullable = match schema.get("type") {
                    Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
                    _ => false,
                };
                let t = if nullable {
                    json!(["string", "null"])
                } else {
                    json!("string")
                };
                out.insert("type".into(), t);
                // Digits with their separators, as a figure is written: not a label, not empty.
                out.insert("pattern".into(), json!(NUMBER_AS_TEXT));
                for k in [
                    "minimum",
                    "maximum",
                    "exclusiveMinimum",
                    "exclusiveMaximum",
                    "multipleOf",
                ] {
                    out.remove(k);
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// Numbers written as text where the schema wants numbers, read as numbers.
fn coerce_numbers(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in map.iter_mut() {
                    if let Some(s) = props.get(k) {
                        coerce_numbers(s, v);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for v in items {
                    coerce_numbers(s, v);
                }
            }
        }
        Value::String(s) => {
            if let Some(integer) = wants_number(schema)
                && let Some(n) = crate::judge::numbers::number(s)
            {
                let n = if integer && n.fract() == 0.0 {
                    Some(Value::from(n as i64))
                } else if integer {
                    None
                } else {
                    serde_json::Number::from_f64(n).map(Value::Number)
                };
                if let Some(n) = n {
                    *value = n;
                }
            }
        }
        _ => {}
    }
}

/// The first JSON object in an answer: the whole answer, inside a code fence, or between its
/// first `{` and last `}`.
fn json_object(answer: &str) -> Option<Value> {
    let t = crate::judge::junk::strip_fence(answer);
    let t = t.trim();
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(t) {
        return Some(v);
    }
    let (start, end) = (t.find('{')?, t.rfind('}')?);
    (start < end)
        .then(|| serde_json::from_str::<Value>(&t[start..=end]).ok())
        .flatten()
        .filter(Value::is_object)
}

/// The system prompt of an extraction request: the skill's own, and how to answer.
pub(crate) fn system_prompt(skill_prompt: &str) -> String {
    format!(
        "{}\n\nAnswer with one JSON object holding the fields the message lists after the document, and nothing else: no code fence, no remarks. Copy each value as the document writes it. Leave out a field the document does not state, or make it null where the field allows.",
        skill_prompt.trim_end()
    )
}

/// The end of an extraction request, after the document: the task, then the fields (a small
/// model does what the message ends with). `format` is the request's `response_format`: where
/// it asks numbers as text, so does the task.
pub(crate) fn task(schema: &Schema, format: &Value) -> String {
    format!(
        "\nNow answer with one JSON object of these fields for the document above, and nothing else:\n{}\n",
        schema::describe(&schema.fields, asks_numbers_as_text(format))
    )
}

/// Whether a `response_format` holds numbers to text: a JSON schema (a server's grammar) with
/// no number left in it. Without a grammar the model writes numbers as it likes, and zhi reads
/// a figure in quotes as its number either way.
fn asks_numbers_as_text(format: &Value) -> bool {
    let Some(schema) = format.pointer("/json_schema/schema") else {
        return false;
    };
    let mut numbers = false;
    walk_types(schema, &mut |t| numbers |= t == "number" || t == "integer");
    !numbers
}

fn walk_types(schema: &Value, seen: &mut dyn FnMut(&str)) {
    match schema {
        Value::Object(m) => {
            match m.get("type") {
                Some(Value::String(t)) => seen(t),
                Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).for_each(&mut *seen),
                _ => {}
            }
            for (k, v) in m {
                if k != "type" {
                    walk_types(v, seen);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| walk_types(v, seen)),
        _ => {}
    }
}

/// Run the extraction request; the validated object is written as `file` (pretty-printed).
pub(crate) async fn run(
    env: &AgentEnv,
    ask: DirectAsk,
    schema: &Schema,
    response_format: Value,
    file: &str,
    stats: &mut AgentStats,
) -> Result<Value, JobError> {
    let name = ask.name.as_str();
    let mut messages = vec![Message::system(ask.system), Message::user(ask.user)];
    let mut last = String::new();
    let mut errors = Vec::new();
    for round in 1..=2 {
        if env.cancel.is_cancelled() {
            return Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled")));
        }
        let mut req = env.chat_request(messages.clone());
        req.response_format = Some(response_format.clone());
        let reply = request(env, name, round, &req, stats).await?;
        last = reply.message.content.clone().unwrap_or_default();
        let cut = reply.finish_reason.as_deref() == Some("length");
        match schema.parse(&last) {
            Ok(value) if !cut => {
                write(env, file, &value)?;
                env.transcript.note(&format!(
                    "the answer is valid against the schema; saved as {file}"
                ));
                return Ok(value);
            }
            Ok(_) => {
                errors = vec![format!(
                    "the answer was cut at the length limit ({} tokens)",
                    env.max_tokens.unwrap_or(0)
                )];
            }
            Err(e) => errors = e,
        }
        let why = errors.join("; ");
        env.transcript.note(&format!(
            "the answer is not valid against the schema: {why}"
        ));
        messages.push(Message::assistant(last.trim_end()));
        messages.push(Message::user(format!(
            "Your answer is not valid: {why}. Answer again with only the JSON object of the fields."
        )));
    }
    keep_rejected(env, file, &last);
    Err(JobError::new(ErrorKind::InvalidOutput, {
        let list = errors.join("; ");
        msg!(
            "the answer is not a JSON object valid against the schema after one corrective request: {list}"
        )
    }))
}

/// The objects of a long document's pieces as one (in piece order): arrays concatenated
/// without repeats, objects merged field by field, a scalar taken from the first piece whose
/// text holds it, else from the first piece that gives one.
pub(crate) fn merge(parts: &[(Value, &str)]) -> Value {
    let hays: Vec<crate::judge::grounding::Haystack> = parts
        .iter()
        .map(|(_, text)| crate::judge::grounding::Haystack::new(text))
        .collect();
    let values: Vec<&Value> = parts.iter().map(|(v, _)| v).collect();
    merge_values(&values, &hays)
}

fn merge_values(values: &[&Value], hays: &[crate::judge::grounding::Haystack]) -> Value {
    let present: Vec<(usize, &Value)> = values
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_null())
        .map(|(i, v)| (i, *v))
        .collect();
    let Some(&(_, first)) = present.first() else {
        return Value::Null;
    };
    match first {
        Value::Object(_) => {
            let mut keys: Vec<&String> = Vec::new();
            let mut seen: HashSet<&String> = HashSet::new();
            for (_, v) in &present {
                for k in v.as_object().into_iter().flat_map(|m| m.keys()) {
                    if seen.insert(k) {
                        keys.push(k);
                    }
                }
            }
            let mut out = serde_json::Map::new();
            for k in keys {
                let column: Vec<&Value> = values
                    .iter()
                    .map(|v| v.get(k.as_str()).unwrap_or(&Value::Null))
                    .collect();
                out.insert(k.clone(), merge_values(&column, hays));
            }
            Value::Object(out)
        }
        Value::Array(_) => {
            // Repeats are told by each item's canonical text (keys sorted), so the merge
            // stays linear in the items, however many.
            let mut out: Vec<Value> = Vec::new();
            let mut seen: HashSet<String> = HashSet::new();
            for (_, v) in &present {
                for item in v.as_array().into_iter().flatten() {
                    if seen.insert(canonical(item)) {
                        out.push(item.clone());
                    }
                }
            }
            Value::Array(out)
        }
        _ => present
            .iter()
            .find(|(i, v)| {
                !hays[*i].spent() && hays[*i].locate(v).how != crate::judge::grounding::Match::None
            })
            .map_or(first, |(_, v)| v)
            .clone(),
    }
}

/// `v` as JSON text with every object's keys sorted: equal values (`==`, which ignores key
/// order) have equal texts.
fn canonical(v: &Value) -> String {
    fn put(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort_unstable();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    put(&m[k.as_str()], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    put(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    put(v, &mut out);
    out
}

fn write(env: &AgentEnv, file: &str, value: &Value) -> Result<(), JobError> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    let sandbox = &env.tools.sandbox;
    let target = sandbox
        .check_write(file)
        .map_err(|r| JobError::new(ErrorKind::Io, r.message().to_string()))?;
    sandbox
        .write_new(&target, &bytes)
        .map(|_| ())
        .map_err(|e| JobError::new(ErrorKind::Io, msg!("cannot write {file}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_arrays_keep_each_item_once_whatever_its_keys_order() {
        let a: Value = serde_json::from_str(
            r#"{"items": [{"name": "chair", "qty": 2}, {"name": "desk", "qty": 1}], "codes": ["a", "b"]}"#,
        )
        .unwrap();
        let b: Value = serde_json::from_str(
            r#"{"items": [{"qty": 1, "name": "desk"}, {"name": "lamp", "qty": 1}], "codes": ["b", "c", 1, 1.0]}"#,
        )
        .unwrap();
        let merged = merge(&[(a, "chair desk"), (b, "desk lamp")]);
        assert_eq!(
            merged,
            json!({"items": [{"name": "chair", "qty": 2}, {"name": "desk", "qty": 1}, {"name": "lamp", "qty": 1}],
                   "codes": ["a", "b", "c", 1, 1.0]})
        );
        // Many items, each once, in piece order.
        let many: Vec<Value> = (0..50_000).map(|i| json!(format!("code-{i}"))).collect();
        let half: Vec<Value> = many[25_000..].to_vec();
        let merged = merge(&[
            (json!({ "codes": many.clone() }), ""),
            (json!({ "codes": half }), ""),
        ]);
        assert_eq!(merged["codes"], Value::Array(many));
    }

    fn schema() -> Schema {
        Schema::new(json!({"type": "object", "properties": {
            "number": {"type": "string"}, "total": {"type": "number"}},
            "required": ["number", "total"]}))
        .unwrap()
    }

    #[test]
    fn answers_are_parsed_from_fences_and_prose_and_validated() {
        let s = schema();
        assert!(
            s.parse("```json\n{\"number\": \"A1\", \"total\": 5}\n```")
                .is_ok()
        );
        assert!(
            s.parse("Here it is: {\"number\": \"A1\", \"total\": 5} Done.")
                .is_ok()
        );
        let errors = s
            .parse("{\"number\": \"A1\", \"total\": \"five\"}")
            .unwrap_err();
        assert!(errors[0].starts_with("/total:"), "{errors:?}");
        let errors = s.parse("{\"number\": \"A1\"}").unwrap_err();
        assert!(errors[0].contains("total"), "{errors:?}");
        assert_eq!(
            s.parse("no json here").unwrap_err(),
            ["the answer is not a JSON object"]
        );
        let described = Schema::new(json!({"type": "object", "properties": {
            "challenge": {"type": "string", "description": "The problem the paper addresses"}}}))
        .unwrap();
        let errors = described
            .parse(r#"{"challenge": "The problem the paper addresses."}"#)
            .unwrap_err();
        assert!(
            errors[0].starts_with("/challenge: the field's description"),
            "{errors:?}"
        );
        assert!(
            described
                .parse(r#"{"challenge": "Parsing is slow."}"#)
                .is_ok()
        );
    }

    #[test]
    fn pieces_merge_arrays_without_repeats_and_take_scalars_where_they_are_found() {
        let merged = merge(&[
            (
                json!({"number": "A-1", "total": 10, "items": [{"n": "tea"}]}),
                "Invoice A-1, items: tea",
            ),
            (
                json!({"number": "B-9", "total": 99, "items": [{"n": "tea"}, {"n": "cake"}]}),
                "tea, cake; total 99",
            ),
        ]);
        assert_eq!(
            merged,
            json!({"number": "A-1", "total": 99, "items": [{"n": "tea"}, {"n": "cake"}]})
        );
    }

    #[test]
    fn numbers_written_as_text_are_read_as_numbers_where_the_schema_wants_them() {
        for (text, n) in [
            ("1,130.00", 1130.0),
            ("¥2938.00", 2938.0),
            ("1.130,50", 1130.5),
            ("EUR 2.000,50", 2000.5),
            ("1 356", 1356.0),
            ("2,938", 2938.0),
            ("12.5", 12.5),
            ("-3", -3.0),
            ("2938元", 2938.0),
            ("0.125", 0.125),
            ("0,125", 0.125),
            ("1.125", 1125.0),
        ] {
            assert_eq!(crate::judge::numbers::number(text), Some(n), "{text}");
        }
        for text in ["about 1000", "13%", "", "1-2"] {
            assert_eq!(crate::judge::numbers::number(text), None, "{text}");
        }
        let s = schema();
        let v = s.parse(r#"{"number": "A1", "total": "1,130.00"}"#).unwrap();
        assert_eq!(v["total"], json!(1130.0));
        assert_eq!(v["number"], "A1", "a string field stays a string");
        let relaxed = numbers_as_text(&s.value);
        assert_eq!(relaxed["properties"]["total"]["type"], "string");
        assert_eq!(relaxed["properties"]["number"]["type"], "string");
    }

    #[test]
    fn servers_that_take_a_schema_get_it_and_others_get_json_object() {
        let s = schema();
        let f = s.response_format(Some("llama.cpp"), "http://127.0.0.1:8080/v1");
        assert_eq!(f["type"], "json_schema");
        assert_eq!(f["json_schema"]["schema"], numbers_as_text(&s.value));
        let f = s.response_format(None, "https://open.bigmodel.cn/api/paas/v4");
        assert_eq!(f, json!({"type": "json_object"}));
        let f = s.response_format(None, "https://api.openai.com/v1");
        assert_eq!(f["type"], "json_schema");
        assert!(f["json_schema"].get("strict").is_none(), "not strict-ready");
        // The task asks numbers in quotes where the grammar holds them to text.
        let quoted = "total (number, in quotes";
        assert!(!task(&s, &f).contains(quoted), "OpenAI's keeps numbers");
        let f = s.response_format(Some("llama.cpp"), "http://127.0.0.1:8080/v1");
        assert!(task(&s, &f).contains(quoted));
        let f = s.response_format(None, "http://127.0.0.1:8080/v1");
        assert!(!task(&s, &f).contains(quoted), "no grammar: json_object");
    }
}
