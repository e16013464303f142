//! Escalation on a real model (docs/escalation.md): the local 0.5B model is the cheap one, a
//! fake is the strong one. `report-polish` over the demo documents: the steps the small model
//! gets wrong are asked of the strong model and succeed; the rest stay on the local model.
//! What the small model gets wrong differs from run to run, so the test checks the rule, not
//! a count: every job succeeds, every escalated step is the strong model's one request for
//! it, and every record names the model that answered.

use crate::need::Need;
use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, latest_records, show};
use std::path::Path;

pub fn tests() -> Vec<crate::Test> {
    vec![crate::Test::new(
        "escalation_local::steps_the_small_model_gets_wrong_succeed_on_the_strong_one",
        &[Need::LocalModel],
        steps_the_small_model_gets_wrong_succeed_on_the_strong_one,
    )]
}

/// What a careful strong model writes for each step of `report-polish` on each demo document.
fn strong(req: &Recorded) -> Reply {
    if !req.is_chat() {
        return Reply::status(404, serde_json::json!({"error": "no"}));
    }
    let all: String = req
        .messages()
        .iter()
        .map(crate::support::fake_api::message_text)
        .collect();
    let proofread = req
        .system_prompt()
        .is_some_and(|s| s.contains("Proofread one document"));
    let text = match (
        all.contains("payment service"),
        all.contains("Release 2.4"),
        proofread,
    ) {
        (true, _, true) => {
            "# Incident report, 14 October\n\nAt 09:12 the payment service stopped answering. The database disk was full because old logs were never rotated. The on-call engineer freed 20 GB at 09:40, and the service came back at 09:44. About 1,200 payments were delayed; none were lost.\n\nActions: rotate logs daily (owner: Wei); alert at 80 percent disk (owner: Sara).\n\n| # | Original | Correction | Reason |\n|---|---|---|---|\n| 1 | at 09:40 and the service | at 09:40, and the service | a comma before the second clause |\n| 2 | delayed, none were lost | delayed; none were lost | a comma splice |\n| 3 | (owner: Wei), alert | (owner: Wei); alert | two separate actions |\n"
        }
        (true, _, false) => {
            "# Incident report: 14 October\n\n## What happened\n\nAt 09:12 the payment service stopped answering. The database disk was full: old logs had never been rotated.\n\n## Recovery\n\nThe on-call engineer freed 20 GB at 09:40. The service came back at 09:44.\n\n## Impact\n\nAbout 1,200 payments were delayed. None were lost.\n\n## Actions\n\n- Rotate logs daily (owner: Wei).\n- Alert at 80 percent disk (owner: Sara).\n"
        }
        (_, true, true) => {
            "# Release 2.4\n\nThis release adds an offline mode and fixes two crashes.\n\n- Offline mode keeps the last 30 days of documents on the device.\n- The importer no longer crashes on empty spreadsheets.\n- Sync is 40 percent faster on slow networks.\n\nSupport for version 1.x ends on 31 March.\n\n| # | Original | Correction | Reason |\n|---|---|---|---|\n| 1 | adds offline mode | adds an offline mode | a missing article |\n"
        }
        (_, true, false) => {
            "# Release 2.4\n\nRelease 2.4 brings an offline mode and fixes two crashes.\n\n## What is new\n\n- **Offline mode:** the last 30 days of documents stay on the device.\n- **Importer:** empty spreadsheets no longer make it crash.\n- **Sync:** 40 percent faster on slow networks.\n\n## End of support\n\nVersion 1.x is supported until 31 March.\n"
        }
        (_, _, true) => {
            "# 产品周会纪要（11月18日）\n\n参会：张伟、李娜、王强\n\n1. 新版本定于12月1日发布，李娜负责撰写发布说明。\n2. 客户反馈导出功能太慢，王强将在本周内给出优化方案。\n3. 下次会议改到周四下午三点。\n\n| 序号 | 原文 | 修改 | 原因 |\n|---|---|---|---|\n| 1 | 李娜负责发布说明 | 李娜负责撰写发布说明 | 缺少动词 |\n| 2 | 王强本周内给出 | 王强将在本周内给出 | 语序更通顺 |\n"
        }
        (_, _, false) => {
            "# 产品周会纪要\n\n**时间：** 11月18日\n**参会：** 张伟、李娜、王强\n\n## 决定与分工\n\n- **发布：** 新版本定于12月1日发布，发布说明由李娜负责。\n- **导出性能：** 客户反映导出功能太慢，王强本周内提出优化方案。\n\n## 下次会议\n\n改到周四下午三点。\n"
        }
    };
    Reply::text(text).with_usage(400, 200)
}

pub fn steps_the_small_model_gets_wrong_succeed_on_the_strong_one() {
    let url = crate::local_model::server();
    let env = TestEnv::new();
    // The strong model priced as glm-4-plus, to read a folder's cost off the records.
    env.write(
        "zhi.yaml",
        "temperature: 0\nprices:\n  strong-model: {input: 5, output: 5, currency: CNY}\n",
    );
    for name in ["release-notes.md", "incident.txt", "会议纪要.txt"] {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/docs")
            .join(name);
        env.write(&format!("docs/{name}"), std::fs::read(src).unwrap());
    }
    let api = FakeApi::start(strong);
    let to = format!("strong-model@{}", api.base_url());
    let out = env
        .zhi()
        .args(["run", "report-polish", "docs", "-j", "1", "--no-progress"])
        .args(["--base-url", url.as_str(), "--escalate", &to])
        .output()
        .unwrap();
    let records = latest_records(&env.path("zhi-output"));
    assert_eq!(records.len(), 3, "{}", show(&out));
    let mut escalated = 0;
    for r in &records {
        assert_eq!(r["status"], "succeeded", "{r}\n{}", show(&out));
        if r["escalated"] == true {
            escalated += 1;
            assert_eq!(r["model"], "strong-model", "{r}");
            assert_eq!(r["escalated_from"], "glm-4-flash", "{r}");
            assert!(
                r["tokens_by_model"]["strong-model"]["prompt"].as_u64() > Some(0),
                "{r}"
            );
        } else {
            assert_eq!(r["model"], "glm-4-flash", "{r}");
        }
    }
    // The strong model was asked only for what the small one got wrong: at most one request
    // per step of an escalated job (two steps each), none for the others.
    let strong_requests = api.chat_requests().len();
    assert!(
        strong_requests <= 2 * escalated,
        "{strong_requests} requests for {escalated} escalated jobs"
    );
    assert_eq!(strong_requests > 0, escalated > 0);
    let mut by_model = std::collections::BTreeMap::<String, (u64, u64)>::new();
    for r in &records {
        let each: Vec<(String, serde_json::Value)> = match r["tokens_by_model"].as_object() {
            Some(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            None => vec![(
                r["model"].as_str().unwrap_or("").to_string(),
                r["tokens"].clone(),
            )],
        };
        for (model, t) in each {
            let e = by_model.entry(model).or_default();
            e.0 += t["prompt"].as_u64().unwrap_or(0);
            e.1 += t["completion"].as_u64().unwrap_or(0);
        }
    }
    eprintln!(
        "escalation on the local model: {escalated} of 3 jobs escalated, {strong_requests} strong request(s); tokens (prompt, completion) by model: {by_model:?}\n{}",
        crate::support::testenv::stderr(&out)
    );
}
