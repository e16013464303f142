//! Extraction skills (docs/extract.md): `output.schema`, a JSON Schema the answer must satisfy,
//! given inline, as a file beside the skill, or as the file a job's argument names
//! (`schema: "{schema}"`). This room reads and checks schemas and describes their fields; the
//! request, the validation of answers and the grounding of values live with the agent.

use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// Where an extraction skill's schema comes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SchemaSpec {
    /// The schema itself: written in the skill, or read from the file beside it when the skill
    /// was loaded.
    Inline(Value),
    /// The JSON (or YAML) file the job's argument of this name points at.
    Arg(String),
}

impl Serialize for SchemaSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SchemaSpec::Inline(v) => v.serialize(s),
            SchemaSpec::Arg(name) => s.serialize_str(&format!("{{{name}}}")),
        }
    }
}

/// What an ungrounded value (found nowhere in the document) does to its job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum GroundingRule {
    /// Kept, and flagged in the record and the table (the default).
    #[default]
    Flag,
    /// A required field's value found nowhere fails the job with `invalid_output`.
    Required,
}

/// The largest schema file zhi reads.
pub(crate) const MAX_SCHEMA_BYTES: u64 = 1 << 20;

/// The file an extraction job writes: the validated object.
pub(crate) const EXTRACTED_FILE: &str = "extracted.json";

/// A schema read from `path` (JSON, or YAML for `.yaml`/`.yml`), checked.
pub(crate) fn read_schema_file(path: &Path) -> Result<Value, String> {
    let bytes = crate::small_file::read(path, MAX_SCHEMA_BYTES)
        .map_err(|e| format!("cannot read the schema {}: {e}", path.display()))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        let path = path.display();
        msg!("the schema {path} is not UTF-8 text")
    })?;
    let yaml = matches!(
        super::extension(&path.to_string_lossy()).as_str(),
        "yaml" | "yml"
    );
    let value: Value = if yaml {
        crate::small_file::check_yaml_nesting(text)
            .map_err(|e| format!("the schema {}: {e}", path.display()))?;
        serde_norway::from_str(text)
            .map_err(|e| format!("the schema {} is not YAML: {e}", path.display()))?
    } else {
        serde_json::from_str(text)
            .map_err(|e| format!("the schema {} is not JSON: {e}", path.display()))?
    };
    check(&value).map_err(|e| format!("the schema {}: {e}", path.display()))?;
    Ok(value)
}

/// A schema zhi can extract with: a valid JSON Schema whose top level is an object with
/// properties.
pub(crate) fn check(schema: &Value) -> Result<(), String> {
    let Some(map) = schema.as_object() else {
        return Err(msg!("a schema must be a JSON object"));
    };
    if map.get("type").and_then(Value::as_str) != Some("object")
        || !map.get("properties").is_some_and(Value::is_object)
    {
        return Err(msg!(
            "the top level must be `type: object` with `properties` (the fields to extract)"
        ));
    }
    jsonschema::validator_for(schema).map_err(|e| format!("not a valid JSON Schema: {e}"))?;
    let taken = reserved_fields(&fields(schema));
    if !taken.is_empty() {
        let names = taken.join(", ");
        return Err(msg!(
            "{names}: a field may not be named as a column the folder's table writes itself (`file`, `status`, `ungrounded`, `doubts`, `error`; `file` in an array's items); rename it"
        ));
    }
    Ok(())
}

/// The columns the folder's table writes itself (docs/extract.md#the-folders-table): a field
/// of that name would overwrite what the table says of the document (which file, its
/// status) with what the model answered.
pub(crate) const TABLE_COLUMNS: [&str; 5] = ["file", "status", "ungrounded", "doubts", "error"];

/// The fields named as the table's own columns: a top-level one named as any of them, an
/// array's item named `file` (each item's sheet begins with the document's file).
fn reserved_fields(fields: &[Field]) -> Vec<String> {
    let mut out = Vec::new();
    for f in fields {
        if TABLE_COLUMNS.contains(&f.path.as_str()) {
            out.push(format!("`{}`", f.path));
        }
        for item in f.items.iter().filter(|i| i.path == "file") {
            out.push(format!("`{}[].{}`", f.path, item.path));
        }
    }
    out
}

/// One field of a schema, flattened: `invoice.seller.name`, or an array (`items`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    /// Dotted path from the top (`seller.name`).
    pub path: String,
    /// `string`, `number`, `integer`, `boolean`, `array`, `object`, or several joined by `|`.
    pub kind: String,
    pub required: bool,
    pub description: Option<String>,
    /// For an array of objects: its items' fields (paths relative to an item).
    pub items: Vec<Field>,
    /// The words that stand before the field's value in a document (`x-labels`, in any
    /// language): doubts judge a value found under another field's label
    /// (docs/extract.md#doubts).
    pub labels: Vec<String>,
}

/// The schema's fields in schema order: nested objects flattened with dots; an array is one
/// field, with its items' fields when they are objects.
pub(crate) fn fields(schema: &Value) -> Vec<Field> {
    let mut out = Vec::new();
    walk(schema, "", &mut out);
    out
}

fn walk(schema: &Value, prefix: &str, out: &mut Vec<Field>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop) in props {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let kinds = kinds(prop);
        if kinds.iter().any(|k| k == "object") && prop.get("properties").is_some() {
            walk(prop, &path, out);
            continue;
        }
        let mut items = Vec::new();
        if let Some(item) = prop.get("items")
            && item.get("properties").is_some()
        {
            walk(item, "", &mut items);
        }
        out.push(Field {
            path,
            kind: kinds.join("|"),
            required: required.contains(&name.as_str()),
            description: prop
                .get("description")
                .and_then(Value::as_str)
                .map(|d| d.trim().to_string()),
            items,
            labels: prop
                .get("x-labels")
                .and_then(Value::as_array)
                .map(|l| {
                    l.iter()
                        .filter_map(Value::as_str)
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        });
    }
}

/// A property's types, `null` left out (`["string", "null"]` → `string`).
fn kinds(prop: &Value) -> Vec<String> {
    let mut kinds: Vec<String> = match prop.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ if prop.get("enum").is_some() => vec!["string".into()],
        _ if prop.get("properties").is_some() => vec!["object".into()],
        _ => vec!["string".into()],
    };
    if kinds.len() > 1 {
        kinds.retain(|k| k != "null");
    }
    kinds
}

/// The fields as the model is told them: one line each, `- path (type, required): what it is`.
/// With `quoted_numbers`, a number is asked for in quotes, as the document writes it: what a
/// server's grammar that takes numbers as text allows (a model told "number" and held to a
/// string by the grammar takes the `null` it is also allowed).
pub(crate) fn describe(fields: &[Field], quoted_numbers: bool) -> String {
    let mut lines = Vec::new();
    for f in fields {
        lines.push(line(f, "", quoted_numbers));
        for item in &f.items {
            lines.push(line(item, &format!("{}[].", f.path), quoted_numbers));
        }
    }
    lines.join("\n")
}

fn line(f: &Field, prefix: &str, quoted_numbers: bool) -> String {
    let mut s = format!("- {prefix}{} ({}", f.path, f.kind);
    if quoted_numbers && matches!(f.kind.as_str(), "number" | "integer") {
        s.push_str(", in quotes: its figure as the document writes it");
    }
    if f.required {
        s.push_str(", required");
    }
    s.push(')');
    if let Some(d) = &f.description
        && !d.is_empty()
    {
        s.push_str(": ");
        s.push_str(&crate::sanitize::one_line(d));
    }
    s
}

/// Whether OpenAI's strict structured outputs can take the schema: every object lists all its
/// properties as required and forbids others.
pub(crate) fn strict_ok(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            if let Some(props) = map.get("properties").and_then(Value::as_object) {
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if map.get("additionalProperties") != Some(&Value::Bool(false))
                    || props.keys().any(|k| !required.contains(&k.as_str()))
                {
                    return false;
                }
            }
            map.values().all(strict_ok)
        }
        Value::Array(items) => items.iter().all(strict_ok),
        _ => true,
    }
}

/// The value at a dotted path of an extracted object (`seller.name`).
pub(crate) fn at<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(object, |v, key| v.as_object().and_then(|m| m.get(key)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn invoice() -> Value {
        json!({
            "type": "object",
            "properties": {
                "invoice_number": {"type": "string", "description": "The invoice's number"},
                "total": {"type": ["number", "null"]},
                "seller": {"type": "object", "properties": {"name": {"type": "string"}}},
                "items": {"type": "array", "items": {"type": "object", "properties": {
                    "description": {"type": "string"}, "amount": {"type": "number"}}}}
            },
            "required": ["invoice_number", "total"]
        })
    }

    #[test]
    fn fields_keep_schema_order_flatten_objects_and_describe_array_items() {
        let f = fields(&invoice());
        let paths: Vec<&str> = f.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["invoice_number", "total", "seller.name", "items"]);
        assert_eq!(f[1].kind, "number");
        assert!(f[1].required && !f[2].required);
        assert_eq!(f[3].items.len(), 2);
        let text = describe(&f, false);
        assert!(text.contains("- invoice_number (string, required): The invoice's number"));
        assert!(text.contains("- items[].amount (number)"));
        // Where the grammar takes numbers as text, the model is told to quote them.
        let quoted = describe(&f, true);
        assert!(
            quoted.contains(
                "- total (number, in quotes: its figure as the document writes it, required)"
            ),
            "{quoted}"
        );
        assert!(quoted.contains("- invoice_number (string, required)"));
    }

    #[test]
    fn schemas_must_be_objects_with_properties_and_valid() {
        assert!(check(&invoice()).is_ok());
        assert!(check(&json!({"type": "string"})).is_err());
        assert!(check(&json!({"type": "object", "properties": {"a": {"type": 5}}})).is_err());
        // The table's own columns are not fields' names; nested, they are.
        let taken = json!({"type": "object", "properties": {
            "status": {"type": "string"}, "seller": {"type": "object", "properties": {"file": {"type": "string"}}},
            "items": {"type": "array", "items": {"type": "object", "properties": {"file": {"type": "string"}}}},
            "error": {"type": "string"}}});
        let e = check(&taken).unwrap_err();
        assert!(e.starts_with("`status`, `items[].file`, `error`: "), "{e}");
    }

    #[test]
    fn strict_needs_every_property_required_and_no_others() {
        assert!(!strict_ok(&invoice()));
        let strict = json!({"type": "object", "additionalProperties": false,
            "properties": {"a": {"type": "string"}}, "required": ["a"]});
        assert!(strict_ok(&strict));
    }
}
