//! Labels found, not written (docs/extract.md#labels): the words a document may print a field
//! under, worked out from the field itself, so that the label and swap checks work on the
//! schema a user writes without naming any. A field is printed under its own name in words
//! (`invoice_number` → "invoice number", "invoice no"), and under the common labels of English
//! and Chinese documents for what it is (a `seller` is printed "Seller", "Vendor", 销售方 or
//! 卖方). The terms a description names in brackets or quotes are added; a field's `x-labels`
//! replace them all.
//!
//! Nothing here asks a model: the labels follow from the schema alone, the same for every
//! document and run, so `zhi plan` and `zhi skills show` can say them. It catches nothing by
//! itself; it lets the label checks judge fields a schema does not annotate. It stays narrow: a
//! concept's labels are the ones a document prints for it alone (合计, which a 发票 prints
//! before both the pre-tax amount and the tax, is no total's label), and a bare generic name
//! (`date`, `name`, `amount`) is no label, since a document prints it before other values too.

/// What documents commonly print a kind of field under.
struct Concept {
    /// Field names (last path segment, lower case, words joined by `_`) that mean it.
    names: &'static [&'static str],
    /// Its labels, lower case as grounding normalises text.
    labels: &'static [&'static str],
}

const CONCEPTS: &[Concept] = &[
    Concept {
        names: &[
            "seller", "vendor", "supplier", "issuer", "merchant", "payee", "sold_by",
        ],
        labels: &[
            "seller",
            "vendor",
            "supplier",
            "sold by",
            "销售方",
            "卖方",
            "销方",
        ],
    },
    Concept {
        names: &[
            "buyer",
            "customer",
            "client",
            "purchaser",
            "bill_to",
            "billed_to",
            "payer",
            "sold_to",
        ],
        labels: &[
            "buyer",
            "customer",
            "client",
            "bill to",
            "billed to",
            "sold to",
            "购买方",
            "买方",
            "购方",
        ],
    },
    Concept {
        names: &[
            "total",
            "total_due",
            "amount_due",
            "grand_total",
            "total_amount",
            "total_with_tax",
            "gross_total",
        ],
        labels: &[
            "total due",
            "amount due",
            "grand total",
            "total",
            "价税合计",
        ],
    },
    Concept {
        names: &[
            "subtotal",
            "net_amount",
            "net_total",
            "amount_before_tax",
            "pre_tax_amount",
        ],
        labels: &["subtotal", "net amount", "net total"],
    },
    Concept {
        names: &["tax", "vat", "tax_amount", "vat_amount", "total_tax"],
        labels: &["vat", "tax", "税额"],
    },
    Concept {
        names: &[
            "date",
            "invoice_date",
            "issue_date",
            "issued",
            "date_of_issue",
            "issued_on",
        ],
        labels: &["invoice date", "date of issue", "issue date", "开票日期"],
    },
    Concept {
        names: &["due_date", "payment_due", "due"],
        labels: &["due date", "payment due", "due by"],
    },
    Concept {
        names: &["invoice_number", "invoice_no", "invoice_id"],
        labels: &["invoice number", "invoice no", "invoice #", "发票号码"],
    },
];

/// Fields whose place in a document says nothing of them: a currency's code is grounded in the
/// signs that stand beside every amount, under the amounts' labels.
const PLACELESS: &[&str] = &["currency", "currency_code", "ccy"];

/// Names too generic to be a label on their own: a document prints them before many values.
const GENERIC: &[&str] = &[
    "date", "name", "number", "no", "amount", "id", "value", "type", "code", "item", "items",
    "price", "text", "data", "info",
];

/// The labels a field named `path` (`seller`, `seller.name`, `invoiceNumber`) may be printed
/// under: its name in words (unless generic), its number's usual abbreviations, and its
/// concept's common labels; each once, in that order.
pub(crate) fn found(path: &str) -> Vec<String> {
    let last = last_segment(path);
    let words = words_of(last);
    if PLACELESS.contains(&words.join("_").as_str()) {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    let mut add = |t: String| {
        if t.chars().count() >= 2 && !out.contains(&t) {
            out.push(t);
        }
    };
    let joined = words.join(" ");
    if !GENERIC.contains(&joined.as_str()) {
        add(joined.clone());
    }
    if let [head @ .., last] = words.as_slice()
        && !head.is_empty()
        && matches!(last.as_str(), "number" | "no" | "num")
    {
        let head = head.join(" ");
        for n in ["number", "no", "no.", "#"] {
            add(format!("{head} {n}"));
        }
    }
    let key = words.join("_");
    for concept in CONCEPTS.iter().filter(|c| c.names.contains(&key.as_str())) {
        for l in concept.labels {
            add((*l).to_string());
        }
    }
    out
}

/// A field's generic name in words (`date`, `name`, `amount`), when it is one: no label of its
/// own (a document prints it before other values too), but a value printed right after it is
/// not under some other field's label further up (`Invoice No.: GX-7781` / `Date: 3 Nov`).
pub(crate) fn generic(path: &str) -> Option<String> {
    let last = last_segment(path);
    let joined = words_of(last).join(" ");
    GENERIC.contains(&joined.as_str()).then_some(joined)
}

/// Whether a field named `path` and described by `description` is a number written as text:
/// its name ends in `number`, `no` or `num` (`invoice_no`, `sectionNumber`), or its
/// description calls it one (`the manual section number`, `发票号码`, `编号`) — not a count
/// (`the number of items`).
pub(crate) fn names_a_number(path: &str, description: Option<&str>) -> bool {
    let last = last_segment(path);
    let words = words_of(last);
    if words
        .last()
        .is_some_and(|w| matches!(w.as_str(), "number" | "no" | "num"))
    {
        return true;
    }
    let Some(d) = description.map(str::to_lowercase) else {
        return false;
    };
    let english = d
        .split(|c: char| !c.is_alphanumeric())
        .collect::<Vec<_>>()
        .windows(2)
        .any(|w| w[0] == "number" && w[1] != "of")
        || d.trim_end_matches(['.', ' ']).ends_with("number");
    english || ["号码", "编号", "序号"].iter().any(|z| d.contains(z))
}

/// The last segment of a field's path: `seller` of `seller`, `name` of `seller.name` and of
/// `items[].name`.
fn last_segment(path: &str) -> &str {
    path.rsplit(['.', ']'])
        .find(|s| !s.is_empty() && *s != "[")
        .unwrap_or(path)
}

/// A name's words, lower case: `invoice_number`, `invoiceNumber`, `Invoice-Number` all give
/// `invoice`, `number`.
fn words_of(name: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c == '_' || c == '-' || c == ' ' {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fields_name_and_concept_give_its_labels() {
        assert_eq!(
            found("invoice_number"),
            [
                "invoice number",
                "invoice no",
                "invoice no.",
                "invoice #",
                "发票号码"
            ]
        );
        assert_eq!(found("invoiceNumber")[0], "invoice number");
        let seller = found("seller");
        assert!(seller.contains(&"seller".to_string()) && seller.contains(&"销售方".to_string()));
        let buyer = found("parties.buyer");
        assert!(buyer.contains(&"bill to".to_string()) && buyer.contains(&"购买方".to_string()));
        // A bare generic name is no label; its concept's labels are.
        let date = found("date");
        assert!(!date.contains(&"date".to_string()), "{date:?}");
        assert!(date.contains(&"开票日期".to_string()));
        // 合计 stands before the pre-tax amount and the tax on a 发票: no total's label.
        assert!(!found("total").contains(&"合计".to_string()));
        assert_eq!(found("items[].amount"), Vec::<String>::new());
        assert_eq!(found("shipping_address"), ["shipping address"]);
        assert!(found("currency").is_empty());
    }
}
