use super::*;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

#[test]
fn precedence_flags_env_files_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".config/zhi")).unwrap();
    std::fs::write(
        home.join(".config/zhi/config.yaml"),
        "base_url: http://home/v1\ntimeout: 7\nrpm: 5\n",
    )
    .unwrap();
    let cwd = dir.path().join("proj");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(cwd.join("zhi.yaml"), "base_url: http://proj/v1\nrpm: 9\n").unwrap();
    let env = env_of(&[("HOME", home.to_str().unwrap())]);
    let c = Config::resolve(&Overrides::default(), &env, &cwd).unwrap();
    assert_eq!(c.api.base_url, "http://proj/v1");
    assert_eq!(c.api.timeout, Duration::from_secs(7));
    assert_eq!(c.run.rpm.map(|n| n.get()), Some(9));

    let env = env_of(&[
        ("HOME", home.to_str().unwrap()),
        ("ZHI_BASE_URL", "http://env/v1"),
    ]);
    let c = Config::resolve(&Overrides::default(), &env, &cwd).unwrap();
    assert_eq!(c.api.base_url, "http://env/v1");
    let ov = Overrides {
        base_url: Some("http://flag/v1/".into()),
        ..Default::default()
    };
    let c = Config::resolve(&ov, &env, &cwd).unwrap();
    assert_eq!(c.api.base_url, "http://flag/v1");
    assert_eq!(c.origins["base_url"], Origin::Flag("--base-url".into()));
}

#[test]
fn a_request_budget_never_exceeds_the_token_budget_of_a_minute() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Config::resolve(&Overrides::default(), &env_of(&[]), dir.path()).unwrap();
    assert_eq!(c.request_budget("glm-4-flash").context_window, 128_000);
    c.run.tpm = NonZeroU32::new(9_000);
    let b = c.request_budget("glm-4-flash");
    assert_eq!((b.context_window, b.max_output), (9_000, 4_096));
    assert_eq!(c.tpm_label(), "--tpm 9000");
}

#[test]
fn key_is_redacted_and_local_needs_none() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_of(&[("ZHI_API_KEY", "sk-secret")]);
    let c = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();
    assert!(!format!("{c:?}").contains("sk-secret"));
    let env = env_of(&[("ZHI_BASE_URL", "http://127.0.0.1:9/v1")]);
    let c = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();
    assert!(c.api.require_key().is_ok());
    let c = Config::resolve(&Overrides::default(), &env_of(&[]), dir.path()).unwrap();
    assert!(c.api.require_key().is_err());
}

/// `rpm: 0` in a file and `--rpm 0` are one setting's one check: both refused in the same
/// words, the file by the settings and the flag by the argument parser
/// (docs/exit-codes.md#usage-errors, docs/config.md#checked-values).
#[test]
fn zero_rpm_is_refused_from_a_file_and_from_the_flag_alike() {
    let dir = tempfile::tempdir().unwrap();
    let none = env_of(&[]);
    for setting in ["rpm", "tpm"] {
        std::fs::write(dir.path().join("zhi.yaml"), format!("{setting}: 0\n")).unwrap();
        let from_file = Config::resolve(&Overrides::default(), &none, dir.path()).unwrap_err();
        std::fs::remove_file(dir.path().join("zhi.yaml")).unwrap();
        let from_flag = super::flag::per_minute("0").unwrap_err();
        let ConfigError::Invalid {
            at: file_at,
            problem: file_problem,
            ..
        } = &from_file
        else {
            panic!("{from_file:?}");
        };
        assert_eq!(file_problem, &from_flag.to_string());
        assert!(from_flag.is::<crate::flags::Refused>());
        assert!(matches!(file_at, Origin::File(f) if f.ends_with("zhi.yaml")));
        assert!(
            from_file
                .to_string()
                .contains(&format!("zhi.yaml: {setting} must be"))
        );
        assert!(from_flag.to_string().contains("at least 1"));
    }
}

#[test]
fn a_value_is_checked_the_same_from_every_source() {
    let dir = tempfile::tempdir().unwrap();
    // The same bad base URL from a file, a variable and a flag: one problem, three places.
    std::fs::write(dir.path().join("zhi.yaml"), "base_url: ftp://x\n").unwrap();
    let from_file = Config::resolve(&Overrides::default(), &env_of(&[]), dir.path())
        .unwrap_err()
        .to_string();
    std::fs::remove_file(dir.path().join("zhi.yaml")).unwrap();
    let from_env = Config::resolve(
        &Overrides::default(),
        &env_of(&[("ZHI_BASE_URL", "ftp://x")]),
        dir.path(),
    )
    .unwrap_err()
    .to_string();
    let ov = Overrides {
        base_url: Some("ftp://x".into()),
        ..Default::default()
    };
    let from_flag = Config::resolve(&ov, &env_of(&[]), dir.path())
        .unwrap_err()
        .to_string();
    let problem = "`ftp://x` must start with http:// or https://";
    assert!(
        from_file.ends_with(&format!("zhi.yaml: base_url {problem}")),
        "{from_file}"
    );
    assert_eq!(from_env, format!("ZHI_BASE_URL: {problem}"));
    assert_eq!(from_flag, format!("--base-url {problem}"));
}

#[test]
fn unknown_keys_of_a_file_warn_naming_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("zhi.yaml"),
        "rmp: 5\nretry: {max_attempts: 2, jitter: 1}\nmodels:\n  m: {context_window: 9000, max_output: 100, speed: 1}\n",
    )
    .unwrap();
    let c = Config::resolve(&Overrides::default(), &env_of(&[]), dir.path()).unwrap();
    let file = dir.path().join("zhi.yaml").display().to_string();
    for key in [
        "unknown setting `rmp`",
        "unknown field `retry.jitter`",
        "unknown field `models.m.speed`",
    ] {
        assert!(
            c.warnings
                .iter()
                .any(|w| w.starts_with(&format!("config file {file}: {key}"))),
            "{key}: {:?}",
            c.warnings
        );
    }
    assert_eq!(c.api.retry.max_attempts, 2);
    assert_eq!(c.models.budget("m").context_window, 9000);
    assert!(c.models.configured.contains("m"));
}

#[test]
fn the_locale_is_read_as_the_messages_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let language = |pairs: &[(&str, &str)]| {
        let mut pairs = pairs.to_vec();
        pairs.push(("HOME", home.to_str().unwrap()));
        let c = Config::resolve(&Overrides::default(), &env_of(&pairs), dir.path()).unwrap();
        c.ui.language
    };
    // LC_ALL, then LC_MESSAGES, then LANG: the first that is set decides.
    assert_eq!(language(&[("LANG", "zh_CN.UTF-8")]), Lang::Zh);
    assert_eq!(
        language(&[("LC_MESSAGES", "zh_CN.UTF-8"), ("LANG", "C.UTF-8")]),
        Lang::Zh
    );
    assert_eq!(
        language(&[("LC_ALL", "C.UTF-8"), ("LC_MESSAGES", "zh_CN.UTF-8")]),
        Lang::En
    );
    assert_eq!(
        language(&[("LC_ALL", ""), ("LANG", "zh_TW.UTF-8")]),
        Lang::Zh
    );
}

#[test]
fn every_provider_by_each_of_its_words_with_its_base_url_and_an_unknown_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    for p in Provider::all() {
        let spec = p.spec();
        for word in std::iter::once(&spec.name).chain(spec.also) {
            let c = Config::resolve(
                &Overrides::default(),
                &env_of(&[("ZHI_PROVIDER", word)]),
                dir.path(),
            )
            .unwrap();
            assert_eq!(c.api.provider, p, "{word}");
            assert_eq!(c.api.base_url, spec.base_url, "{word}");
        }
    }
    let c = Config::resolve(&Overrides::default(), &env_of(&[]), dir.path()).unwrap();
    assert_eq!(c.api.provider.as_str(), "zhipu");
    assert_eq!(c.api.base_url, "https://open.bigmodel.cn/api/paas/v4");

    // The same words as before the providers were a table.
    let from_env = Config::resolve(
        &Overrides::default(),
        &env_of(&[("ZHI_PROVIDER", "claude")]),
        dir.path(),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(from_env, "ZHI_PROVIDER: `claude` is not zhipu or openai");
    std::fs::write(dir.path().join("zhi.yaml"), "provider: claude\n").unwrap();
    let from_file = Config::resolve(&Overrides::default(), &env_of(&[]), dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        from_file.ends_with("zhi.yaml: provider `claude` is not zhipu or openai"),
        "{from_file}"
    );
}
