//! The providers zhi speaks to, one entry each in [`PROVIDERS`]: the words that name it in the
//! settings, its default API base, the hosted services known to speak its API, and its
//! [`Dialect`] (how a request carries the key, where each endpoint lies below the base, which
//! version a Batch API request line names).
//!
//! Everything else reads this table: the settings accept a provider by its words and take its
//! base URL when none is given (`config`), the client builds endpoint URLs and applies the
//! key from the dialect's data (`llm::provider`), and a base URL on a known host is not probed
//! (`llm::is_known_provider`). This module is a leaf: it imports nothing of the crate, so the
//! settings and the client may both read it.
//!
//! # Adding a provider
//!
//! Add one [`Spec`] to [`PROVIDERS`], in this file; no other code changes. Its `name` is what
//! the settings and `zhi config show` write, its `also` the other words a user may write, its
//! `base_url` the default API base (without a trailing `/`), its `hosts` the hosts (and their
//! subdomains) whose limits are known, and its `dialect` how its API is spoken. The first
//! entry is the default provider. The unit tests below check that the table is consistent
//! (each word names one provider, each base URL is on one of its own hosts, …), and the
//! message for an unknown provider lists every name by itself, in both languages. What a
//! person reads about providers changes with the table: docs/model-api.md#adding-a-provider.

use std::fmt;

/// How the API key goes with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The key as the whole value of the named header (`api-key`, `x-api-key`): the seam a
    /// provider that does not take a bearer token is added through (none in the table yet).
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "no provider in the table takes its key in a header yet"
        )
    )]
    Header(&'static str),
}

/// The path segments of an endpoint below the API base.
pub(crate) type Segments = &'static [&'static str];

/// How a provider's API is spoken: what differs from one provider to another on the wire. The
/// client's use of it (building URLs, applying the key) is in `llm::provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dialect {
    pub auth: Auth,
    /// Chat completions.
    pub chat: Segments,
    /// File uploads, listings, contents and deletions (batches, file-extract OCR).
    pub files: Segments,
    /// The Batch API.
    pub batches: Segments,
    /// Zhipu's layout parsing (the `glm-ocr` engine).
    pub layout_parsing: Segments,
    /// The version a batch request line's chat path names (`/v4/chat/completions`) when the
    /// base URL names none.
    pub batch_version: &'static str,
}

/// One provider: everything zhi knows of it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    /// The lowercase name, as settings and `zhi config show` write it.
    pub name: &'static str,
    /// Other words that name it in the settings (any case, spaces around ignored).
    pub also: &'static [&'static str],
    /// The API base used when no setting names one, without a trailing `/`.
    pub base_url: &'static str,
    /// Hosts (and their subdomains) of hosted services that speak this provider's API and
    /// whose limits zhi knows; a base URL on one of them is never probed.
    pub hosts: &'static [&'static str],
    /// How its API is spoken.
    pub dialect: Dialect,
}

/// Every provider; the first is the default.
pub(crate) const PROVIDERS: &[Spec] = &[
    // Zhipu BigModel (and its international site, Z.ai).
    Spec {
        name: "zhipu",
        also: &["bigmodel", "glm"],
        base_url: "https://open.bigmodel.cn/api/paas/v4",
        hosts: &["bigmodel.cn", "z.ai"],
        dialect: OPENAI_PATHS,
    },
    // Any OpenAI-compatible server: OpenAI, DeepSeek, Moonshot, Ollama, vLLM, llama.cpp. A
    // server that also speaks Zhipu's layout parsing (a proxy, a test double) is reached at
    // the same path.
    Spec {
        name: "openai",
        also: &["openai-compatible"],
        base_url: "https://api.openai.com/v1",
        hosts: &[
            "openai.com",
            "deepseek.com",
            "moonshot.cn",
            "moonshot.ai",
            "dashscope.aliyuncs.com",
            "api.anthropic.com",
        ],
        dialect: Dialect {
            batch_version: "v1",
            ..OPENAI_PATHS
        },
    },
];

/// The bearer key and the endpoint paths of OpenAI's API, which Zhipu's follows (its batch
/// lines name `v4`).
const OPENAI_PATHS: Dialect = Dialect {
    auth: Auth::Bearer,
    chat: &["chat", "completions"],
    files: &["files"],
    batches: &["batches"],
    layout_parsing: &["layout_parsing"],
    batch_version: "v4",
};

/// Which provider the model server is: an entry of [`PROVIDERS`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Provider(&'static Spec);

impl Provider {
    /// The provider a user's word names (`zhipu`, `bigmodel`, `glm`, `openai`, …).
    pub(crate) fn parse(s: &str) -> Option<Self> {
        let word = s.trim().to_ascii_lowercase();
        PROVIDERS
            .iter()
            .find(|p| p.name == word || p.also.contains(&word.as_str()))
            .map(Provider)
    }
    /// Every provider, the default first.
    #[cfg(test)]
    pub(crate) fn all() -> impl Iterator<Item = Provider> {
        PROVIDERS.iter().map(Provider)
    }
    /// Everything known of it.
    #[cfg(test)]
    pub(crate) fn spec(self) -> &'static Spec {
        self.0
    }
    /// The lowercase name, as settings and `zhi config show` write it.
    pub(crate) fn as_str(self) -> &'static str {
        self.0.name
    }
    /// The API base used when no setting names one.
    pub(crate) fn default_base_url(self) -> &'static str {
        self.0.base_url
    }
    /// How its API is spoken.
    pub(crate) fn dialect(self) -> Dialect {
        self.0.dialect
    }
}

impl Default for Provider {
    /// The first of [`PROVIDERS`] (Zhipu).
    fn default() -> Self {
        Provider(&PROVIDERS[0])
    }
}

impl Default for Dialect {
    /// The default provider's.
    fn default() -> Self {
        Provider::default().dialect()
    }
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Provider({})", self.0.name)
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl serde::Serialize for Provider {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.name)
    }
}

/// The providers' names as a choice (`zhipu or openai`, `a, b or c`): every name but the last,
/// then the last.
pub(crate) fn names_but_last() -> (String, &'static str) {
    let names: Vec<&str> = PROVIDERS.iter().map(|p| p.name).collect();
    match names.split_last() {
        Some((last, rest)) => (rest.join(", "), last),
        None => (String::new(), ""),
    }
}

/// Whether `host` (lowercase, no trailing `.`) is one of a provider's known hosts or a
/// subdomain of one.
pub(crate) fn is_known_host(host: &str) -> bool {
    PROVIDERS.iter().flat_map(|p| p.hosts).any(|known| {
        host == *known
            || host
                .strip_suffix(known)
                .is_some_and(|rest| rest.ends_with('.'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn the_table_is_consistent() {
        assert!(
            PROVIDERS.len() >= 2,
            "the unknown provider message needs two"
        );
        let mut words = BTreeSet::new();
        for p in Provider::all() {
            let spec = p.spec();
            // Each word names one provider, and each parses back to it, in any case.
            for word in std::iter::once(&spec.name).chain(spec.also) {
                assert_eq!(*word, word.trim().to_ascii_lowercase(), "{word}");
                assert!(!word.is_empty());
                assert!(words.insert(*word), "`{word}` names two providers");
                assert_eq!(Provider::parse(word), Some(p), "{word}");
                assert_eq!(
                    Provider::parse(&format!(" {} ", word.to_ascii_uppercase())),
                    Some(p)
                );
            }
            assert_eq!(p.as_str(), spec.name);
            assert_eq!(p.to_string(), spec.name);
            assert_eq!(
                serde_json::to_value(p).ok(),
                Some(serde_json::json!(spec.name))
            );
            // The default base is an https URL without a trailing `/`, on one of its own hosts
            // (so it is never probed).
            let base = p.default_base_url();
            let host = base
                .strip_prefix("https://")
                .and_then(|rest| rest.split('/').next())
                .unwrap_or_else(|| panic!("{base} is not https"));
            assert!(!base.ends_with('/'), "{base}");
            assert!(
                spec.hosts
                    .iter()
                    .any(|h| host == *h || host.ends_with(&format!(".{h}"))),
                "{base} is not on a host of {}",
                spec.name
            );
            for h in spec.hosts {
                assert!(is_known_host(h), "{h}");
            }
            // Every endpoint has a path; a batch version names one.
            let d = p.dialect();
            for path in [d.chat, d.files, d.batches, d.layout_parsing] {
                assert!(!path.is_empty() && path.iter().all(|s| !s.is_empty() && !s.contains('/')));
            }
            assert!(d.batch_version.starts_with('v'), "{}", d.batch_version);
        }
        assert_eq!(Provider::parse("anthropic-ish"), None);
        assert_eq!(Provider::parse(""), None);
    }

    #[test]
    fn zhipu_is_the_default_and_the_two_differ_in_their_batch_version() {
        let zhipu = Provider::parse("glm");
        assert_eq!(zhipu, Some(Provider::default()));
        assert_eq!(Dialect::default(), Provider::default().dialect());
        assert_eq!(
            Provider::default().default_base_url(),
            "https://open.bigmodel.cn/api/paas/v4"
        );
        let openai = Provider::parse("openai-compatible").map(Provider::dialect);
        assert_eq!(openai.map(|d| d.batch_version), Some("v1"));
        assert_eq!(Provider::default().dialect().batch_version, "v4");
        assert_eq!(names_but_last(), ("zhipu".to_string(), "openai"));
    }

    #[test]
    fn known_hosts_and_their_subdomains_only() {
        assert!(is_known_host("open.bigmodel.cn"));
        assert!(is_known_host("api.openai.com"));
        assert!(!is_known_host("notopenai.com"));
        assert!(!is_known_host("openai.com.example.net"));
    }
}
