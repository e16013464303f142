//! The prose doubts on texts like those a small model writes.

use super::*;

/// The doubts of a rendering, never stopped.
fn translation(source: &str, answer: &str, language: &str) -> Vec<ProseDoubt> {
    super::translation(source, answer, language, &|| false)
}

/// The doubts of a condensing, never stopped.
fn condensed(source: &str, answer: &str) -> Vec<ProseDoubt> {
    super::condensed(source, answer, &|| false)
}

fn translated_part(source: &str, answer: &str) -> String {
    super::translated_part(source, answer, &Work::new(&|| false))
}

fn read_figures(text: &str) -> Figures {
    super::read_figures(text, &Work::new(&|| false))
}

const MEETING_ZH: &str = "项目周会纪要
时间：2026年3月12日 下午三点
参会人：张伟、李娜、王强
1. 支付服务上周共处理12,000笔订单，失败率0.8%。
2. 李娜负责在3月20日前完成对账脚本。
3. 王强报告服务器费用为一千二百元，预算1.2万元。
4. 张伟建议下次会议改到上午九点半。
下次会议：3月19日 下午三点";

const MEETING_EN: &str = "Weekly project meeting notes
Time: March 12, 2026, 3:00 PM
Attendees: Zhang Wei, Li Na, Wang Qiang
1. Last week the payment service processed 12,000 orders, with a failure rate of 0.8%.
2. Li Na will finish the reconciliation script by March 20.
3. Wang Qiang reported server costs of 1,200 yuan against a budget of 12,000 yuan.
4. Zhang Wei suggested moving the next meeting to 9:30 AM.
Next meeting: March 19, 3:00 PM";

const INCIDENT_EN: &str = "At 09:12 the payment service stopped answering requests.
The on-call engineer restarted the gateway at 09:40.
About 1,200 orders failed during the outage.
Customers were refunded a total of $3,450.75.
A review meeting is scheduled for 3 pm on Friday.";

const INCIDENT_ZH: &str = "09:12，支付服务停止响应请求。
值班工程师于09:40重启了网关。
停机期间约有1,200笔订单失败。
共向客户退款3,450.75美元。
复盘会议定于周五下午3点举行。";

const DEBIAN_EN: &str = "## 2.1. Package sources

APT reads the list of package sources from `/etc/apt/sources.list` and from files in \
/etc/apt/sources.list.d/. After you edit these files, run `apt-get update` to download the new \
package lists.

A typical line looks like this:

deb http://deb.debian.org/debian bookworm main contrib

You can also use aptitude or synaptic to install packages. See \
https://www.debian.org/doc/manuals/debian-reference/ for details, or write to \
debian-doc@lists.debian.org.

Use apt-cache policy to see which version of a package will be installed. The file_name option \
and the Dir::Etc::SourceList setting change where APT looks.";

const DEBIAN_ZH: &str = "## 2.1. 软件包源

APT 从 `/etc/apt/sources.list` 以及 /etc/apt/sources.list.d/ 目录中的文件读取软件包源列表。\
编辑这些文件后，请运行 `apt-get update` 下载新的软件包列表。

典型的一行如下：

deb http://deb.debian.org/debian bookworm main contrib

你也可以使用 aptitude 或 synaptic 来安装软件包。详情参见 \
https://www.debian.org/doc/manuals/debian-reference/，或写信至 debian-doc@lists.debian.org。

使用 apt-cache policy 查看将会安装的软件包版本。file_name 选项和 Dir::Etc::SourceList \
设置会改变 APT 查找的位置。";

fn checks(doubts: &[ProseDoubt]) -> Vec<&'static str> {
    doubts.iter().map(|d| d.check).collect()
}

fn detail<'a>(doubts: &'a [ProseDoubt], check: &str) -> &'a str {
    doubts
        .iter()
        .find(|d| d.check == check)
        .map_or("", |d| d.detail.as_str())
}

#[test]
fn a_faithful_translation_has_no_doubts() {
    assert_eq!(translation(MEETING_ZH, MEETING_EN, "english"), []);
    assert_eq!(translation(INCIDENT_EN, INCIDENT_ZH, "Chinese"), []);
}

#[test]
fn a_name_half_in_characters_is_untranslated() {
    let answer = MEETING_EN.replace(
        "Attendees: Zhang Wei, Li Na, Wang Qiang",
        "Attendees: Zhang伟,李娜, Wang强",
    );
    let doubts = translation(MEETING_ZH, &answer, "en");
    assert_eq!(checks(&doubts), ["untranslated"]);
    assert_eq!(
        detail(&doubts, "untranslated"),
        "Chinese left untranslated: 伟, 李娜, 强"
    );
}

#[test]
fn english_left_in_a_chinese_line_is_untranslated() {
    let answer = INCIDENT_ZH.replace(
        "09:12，支付服务停止响应请求。",
        "At 09:12，支付服务停止了 answering",
    );
    let doubts = translation(INCIDENT_EN, &answer, "zh");
    assert_eq!(checks(&doubts), ["untranslated"]);
    assert_eq!(
        detail(&doubts, "untranslated"),
        "English left untranslated: 'At' (line 1), 'answering' (line 1)"
    );
    let lazy =
        "At 09:12 the payment service stopped answering requests.\n值班工程师于09:40重启了网关。";
    assert!(checks(&translation(INCIDENT_EN, lazy, "中文")).contains(&"untranslated"));
}

#[test]
fn afternoon_three_is_not_one_pm() {
    let doubts = translation(
        "会议定于下午三点开始。",
        "The meeting starts at 1:00 PM.",
        "en",
    );
    assert_eq!(
        detail(&doubts, "figures"),
        "figures changed: 15:00 (下午三点) missing; 13:00 (1:00 PM) not in the source"
    );
    let answer = MEETING_EN.replace(
        "Time: March 12, 2026, 3:00 PM",
        "Time: March 12, 2026, 1:00 PM",
    );
    let doubts = translation(MEETING_ZH, &answer, "english");
    assert_eq!(
        detail(&doubts, "figures"),
        "figures changed: 13:00 (1:00 PM) not in the source"
    );
}

#[test]
fn afternoon_three_is_any_three_pm() {
    for answer in [
        "3:00 PM",
        "3 pm",
        "15:00",
        "3 PM",
        "3 p.m.",
        "three o'clock, 3 in the afternoon",
    ] {
        let doubts = translation(
            "会议定于下午三点开始。",
            &format!("The meeting starts at {answer}."),
            "en",
        );
        assert_eq!(doubts, [], "{answer}");
    }
    let doubts = translation(
        "会议三点半开始，上午九点结束。",
        "It starts at 3:30 and ends at 9 AM.",
        "en",
    );
    assert_eq!(doubts, []);
    // A range takes its part of day from its end; scales are compared by value.
    let doubts = translation(
        "The review runs from 3-5 PM; the budget is $1.2M.",
        "评审会在下午3点到5点进行；预算为120万美元。",
        "zh",
    );
    assert_eq!(doubts, []);
}

#[test]
fn chinese_numerals_are_read_as_numbers() {
    let keys = |text: &str| read_figures(text).known;
    for (text, key) in [
        ("十二人", "n:12"),
        ("二十五个", "n:25"),
        ("一百二十元", "n:120"),
        ("一千二百元", "n:1200"),
        ("两千台", "n:2000"),
        ("预算1.2万元", "n:12000"),
        ("一万二千", "n:12000"),
        ("二〇二六年", "n:2026"),
        ("１，２００.５０", "n:1200.5"),
        ("晚上八点", "t:20:00"),
        ("三点半", "t:15:30"),
    ] {
        assert!(keys(text).contains(key), "{text}: {:?}", keys(text));
    }
    assert!(
        read_figures("一些人，十分重要，三点建议")
            .list
            .iter()
            .all(|f| f.weak)
    );
}

#[test]
fn a_remark_about_the_translation() {
    let answer = format!(
        "{MEETING_EN}\n\nThis translation maintains the original structure and meaning of the notes."
    );
    let doubts = translation(MEETING_ZH, &answer, "en");
    assert_eq!(checks(&doubts), ["remark"]);
    assert!(detail(&doubts, "remark").contains("'This translation maintains the original"));
    let answer = format!("以下是翻译：\n{INCIDENT_ZH}");
    assert_eq!(checks(&translation(INCIDENT_EN, &answer, "zh")), ["remark"]);
    let answer = format!("{MEETING_EN}\n\nNote: I kept the names in pinyin.");
    assert_eq!(checks(&translation(MEETING_ZH, &answer, "en")), ["remark"]);
    // A text about translation may say so itself.
    let source = "The translation team meets on Friday.";
    assert_eq!(translation(source, "翻译团队周五开会。", "zh"), []);
}

#[test]
fn headings_the_source_does_not_have() {
    let answer = "# Meeting notes\n## Attendees\nZhang Wei, Li Na, Wang Qiang\n\nAction items\n---\nLi Na: the reconciliation script by March 20.";
    let doubts = translation(
        "参会人：张伟、李娜、王强\n李娜：3月20日前完成对账脚本。",
        answer,
        "en",
    );
    assert_eq!(checks(&doubts), ["headings"]);
    assert_eq!(
        detail(&doubts, "headings"),
        "headings the source does not have: 'Meeting notes', 'Attendees', 'Action items'"
    );
    // One more than the source's, a title, is fine; code comments are no headings.
    let source = "# A\ntext\n# B\ntext";
    let answer = "# 标题\n# 甲\n文本\n```sh\n# 注释\n```\n# 乙\n文本";
    assert_eq!(translation(source, answer, "zh"), []);
}

#[test]
fn a_faithful_technical_translation_keeps_its_terms() {
    assert_eq!(translation(DEBIAN_EN, DEBIAN_ZH, "zh-CN"), []);
    let part = translated_part(DEBIAN_EN, DEBIAN_ZH);
    let han = part.chars().filter(|c| is_han(*c)).count();
    let latin = part.chars().filter(char::is_ascii_alphabetic).count();
    assert!(han >= 80 && latin * 5 < han, "{part}");
    for kept in [
        "sources.list",
        "apt-get",
        "http",
        "Dir::Etc",
        "file_name",
        "debian-doc",
        "bookworm",
    ] {
        assert!(!part.contains(kept), "{kept} in {part}");
    }
}

#[test]
fn translated_part_drops_the_fence_and_keeps_prose() {
    let answer = "```markdown\n支付服务停止了 answering。\n运行 `apt-get update`。\n```";
    assert_eq!(
        translated_part(INCIDENT_EN, answer),
        "支付服务停止了 answering。\n运行 。"
    );
    assert_eq!(
        translated_part("张伟使用 Docker。", "Zhang Wei uses Docker."),
        "Zhang Wei uses ."
    );
}

#[test]
fn a_reordered_note_is_a_near_copy() {
    let lines: Vec<&str> = MEETING_ZH.lines().collect();
    let answer = [
        lines[2], lines[0], lines[5], lines[3], lines[7], lines[6], lines[1],
    ]
    .join("\n")
    .replace("3. ", "- ")
    .replace("1. ", "- ");
    let doubts = condensed(MEETING_ZH, &answer);
    assert_eq!(checks(&doubts), ["near_copy"]);
    assert_eq!(
        detail(&doubts, "near_copy"),
        "a near-copy: 7 of 8 of the source's lines are in it"
    );
}

#[test]
fn a_long_answer_is_a_near_copy() {
    let source: String = (1..=30)
        .map(|i| format!("Item {i} was shipped to warehouse {i} on day {i} of the month.\n"))
        .collect();
    let answer: String = (1..=25)
        .map(|i| format!("Warehouse number {i} received its item {i} that day. "))
        .collect();
    let doubts = condensed(&source, &answer);
    assert_eq!(checks(&doubts), ["near_copy"]);
    assert!(detail(&doubts, "near_copy").starts_with("as long as "));
    // A short note's summary may be half its length.
    let answer = "The payment service failed at 09:12 and was restarted at 09:40; about 1,200 \
orders failed and customers got $3,450.75 back. The gateway restart fixed it, and the review \
meeting is on Friday at 3 pm with the on-call engineer and the payment team.";
    assert_eq!(condensed(INCIDENT_EN, answer), []);
}

#[test]
fn a_real_summary_has_no_doubts() {
    let summary = "3月12日周会：上周支付订单12,000笔，失败率0.8%；李娜须于3月20日前完成对账脚本；\
下次会议3月19日下午三点。";
    assert_eq!(condensed(MEETING_ZH, summary), []);
    let summary = "The payment service was down from 09:12 to 09:40; 1,200 orders failed and \
$3,450.75 was refunded. Review on Friday at 3 PM.";
    assert_eq!(condensed(INCIDENT_EN, summary), []);
}

#[test]
fn an_invented_year_is_a_figure() {
    let summary = "2025年3月12日周会：失败率0.8%，下次会议3月19日下午四点。";
    let doubts = condensed(MEETING_ZH, summary);
    assert_eq!(checks(&doubts), ["figures"]);
    assert_eq!(
        detail(&doubts, "figures"),
        "figures not in the source: 2025 (2025年), 16:00 (下午四点)"
    );
}

#[test]
fn list_numbers_are_not_figures() {
    let doubts = translation(
        "1. 检查日志\n2. 重启服务",
        "- Check the logs\n- Restart the service",
        "en",
    );
    assert_eq!(doubts, []);
    assert_eq!(without_marker("## 2.1 Setup"), "Setup");
    assert_eq!(without_marker("一、背景"), "背景");
    assert_eq!(without_marker("3.5 million"), "3.5 million");
}

/// A summary longer than the note it summarises is doubted; one in another script is measured
/// in tokens, not letters, so an English summary of Chinese notes is not taken for longer.
#[test]
fn a_summary_longer_than_its_source_is_doubted() {
    let note = "Plant opens in May. Ana leads.";
    let talky = "# Summary\n\nThe note says that the new plant is going to open its doors in the month of May, and that Ana will be the person leading it.";
    let doubts = condensed(note, talky);
    assert_eq!(checks(&doubts), ["longer"]);
    assert!(detail(&doubts, "longer").starts_with("longer than its source: about "));
    assert_eq!(
        condensed(note, "# Summary\n\nThe plant opens in May, led by Ana."),
        []
    );
    // 会议纪要 of 36 characters: an English summary of 60 letters is shorter in tokens.
    let zh = "周一例会：新厂五月开业，由安娜负责；预算已批准，下周再议人员安排。";
    assert_eq!(
        condensed(
            zh,
            "The new plant opens in May under Ana; the budget is approved."
        ),
        []
    );
}

/// The sentences of `units` found in `lines` as the near-copy check found them before it had
/// an index: a search of the whole answer, and of every line, per sentence.
fn found_by_search(units: &[Vec<String>], lines: &[Vec<String>]) -> usize {
    let joined = |p: &[String]| {
        let mut s = String::from('\u{1}');
        for x in p {
            s.push_str(x);
            s.push('\u{1}');
        }
        s
    };
    let pairs = |p: &[String]| -> HashSet<String> {
        p.windows(2)
            .map(|w| format!("{}\u{1}{}", w[0], w[1]))
            .collect()
    };
    let share = |u: &[String], set: &HashSet<String>| {
        let own = pairs(u);
        match own.is_empty() {
            true => 0.0,
            false => own.iter().filter(|p| set.contains(*p)).count() as f64 / own.len() as f64,
        }
    };
    let all: Vec<String> = lines.concat();
    let whole = joined(&all);
    let whole_pairs = pairs(&all);
    let line_pairs: Vec<HashSet<String>> = lines.iter().map(|l| pairs(l)).collect();
    units
        .iter()
        .filter(|u| {
            whole.contains(&joined(u))
                || (share(u, &whole_pairs) >= 0.8 && line_pairs.iter().any(|p| share(u, p) >= 0.8))
        })
        .count()
}

#[test]
fn the_indexed_near_copy_finds_what_a_search_per_sentence_finds() {
    let mut rng = fastrand::Rng::with_seed(47);
    let words = ["ab", "cd", "ef", "gh", "ij", "kl", "mn", "支", "付"];
    let sentence = |rng: &mut fastrand::Rng, most: usize| -> Vec<String> {
        let n = rng.usize(1..most);
        (0..n)
            .map(|_| words[rng.usize(..words.len())].to_string())
            .collect()
    };
    for _ in 0..300 {
        let units: Vec<Vec<String>> = (0..rng.usize(1..8))
            .map(|_| sentence(&mut rng, 10))
            .collect();
        // Lines drawn from the sentences: whole, cut, with a word changed, joined, or new.
        let mut lines: Vec<Vec<String>> = Vec::new();
        for _ in 0..rng.usize(0..10) {
            let u = &units[rng.usize(..units.len())];
            let mut line = match rng.u8(..5) {
                0 => u.clone(),
                1 => u[..rng.usize(..=u.len())].to_vec(),
                2 => u[rng.usize(..=u.len())..].to_vec(),
                3 => sentence(&mut rng, 12),
                _ => [u.clone(), units[rng.usize(..units.len())].clone()].concat(),
            };
            if !line.is_empty() && rng.bool() {
                let k = rng.usize(..line.len());
                line[k] = words[rng.usize(..words.len())].to_string();
            }
            if !line.is_empty() {
                lines.push(line);
            }
        }
        let work = Work::new(&|| false);
        assert_eq!(
            sentences_found(&units, &lines, &work),
            Some(found_by_search(&units, &lines)),
            "{units:?} in {lines:?}"
        );
    }
}

#[test]
fn a_near_copy_of_a_long_answer_costs_its_length() {
    // Each sentence with a word changed and broken over two lines, again and again: most of
    // its pairs in the answer, never most in one line, so every line was searched per
    // sentence before.
    let source: String = (0..400)
        .map(|i| {
            format!("Batch {i} of the orders was shipped to the northern warehouse on time.\n")
        })
        .collect();
    let mut answer = String::new();
    for round in 0..40 {
        for line in source.lines() {
            let w: Vec<&str> = line.split(' ').collect();
            answer.push_str(&format!(
                "{} r{round}\n{}\n",
                w[..6].join(" "),
                w[7..].join(" ")
            ));
        }
    }
    let work = Work::new(&|| false);
    assert!(near_copy(&source, &answer, &work).is_some());
    let read = (source.len() + answer.len()) as u64;
    assert!(
        work.done() <= 4 * read,
        "{} units for {read} bytes",
        work.done()
    );
}

/// The code spans of a line as they were found before: a pass over the rest of the line per
/// run of backticks.
fn code_spans_by_search(chars: &[char]) -> Vec<(usize, usize)> {
    let run_at = |k: usize| chars[k..].iter().take_while(|c| **c == '`').count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let start = i;
        let n = run_at(i);
        i += n;
        let mut j = i;
        while j < chars.len() {
            if chars[j] != '`' {
                j += 1;
                continue;
            }
            let m = run_at(j);
            j += m;
            if m == n {
                out.push((start, j));
                i = j;
                break;
            }
        }
    }
    out
}

#[test]
fn code_spans_are_found_as_a_search_per_run_found_them() {
    let mut rng = fastrand::Rng::with_seed(47);
    for _ in 0..2_000 {
        let line: Vec<char> = (0..rng.usize(0..40))
            .map(|_| ['`', '`', 'a', ' '][rng.usize(..4)])
            .collect();
        assert_eq!(
            code_spans(&line),
            code_spans_by_search(&line),
            "{}",
            line.iter().collect::<String>()
        );
    }
}

#[test]
fn kept_phrases_are_looked_up_in_an_index_not_the_source() {
    // A Chinese rendering full of commands and paths, each phrase once looked for by a pass
    // over the source.
    let source: String = (0..2_000)
        .map(|i| format!("Run `apt-get install pkg{i}` and then ls -la /srv/data{i} to check.\n"))
        .collect();
    let answer: String = (0..20_000)
        .map(|i| format!("运行 apt-get install pkg{i} 后，用 ls -la /srv/data{i} 检查。\n"))
        .collect();
    let work = Work::new(&|| false);
    let lines = translated_lines(&source, &answer, &work);
    assert_eq!(lines.len(), 20_000);
    assert!(!lines[0].contains("apt-get"), "{}", lines[0]);
    let read = (source.len() + answer.len()) as u64;
    assert!(
        work.done() <= 4 * read,
        "{} units for {read} bytes",
        work.done()
    );
}

#[test]
fn a_stopped_check_raises_no_doubt() {
    let lines: Vec<&str> = MEETING_ZH.lines().collect();
    let copy = lines.join("\n");
    assert_eq!(checks(&condensed(MEETING_ZH, &copy)), ["near_copy"]);
    assert_eq!(super::condensed(MEETING_ZH, &copy, &|| true), []);
}

#[test]
fn figures_are_read_by_the_one_reader_of_numbers() {
    // A translator who writes the source's grouping dot as a comma keeps the figure.
    let doubts = translation(
        "Der Server verarbeitete 1.500 Anfragen.",
        "服务器处理了1,500个请求。",
        "zh",
    );
    assert!(!checks(&doubts).contains(&"figures"), "{doubts:?}");
    // A decimal comma is the decimal point of the translation.
    let doubts = translation("Die Fehlerquote lag bei 1,50 %.", "错误率为1.50%。", "zh");
    assert!(!checks(&doubts).contains(&"figures"), "{doubts:?}");
    // A changed figure is still one.
    let doubts = translation(
        "Der Server verarbeitete 1.500 Anfragen.",
        "服务器处理了1,600个请求。",
        "zh",
    );
    assert!(checks(&doubts).contains(&"figures"), "{doubts:?}");
}

/// A section like the Debian Reference's: a command written in plain quotes, a login banner
/// printed as text, kept terms.
const SHELL_EN: &str = "The shell prompt

Suppose your hostname is foo, the login prompt looks as follows.

foo login:

To repeat a command, type \"for x in foo1 foo2 foo3 ; do command ; done\" at the prompt.
Programs marked setuid root run with the privilege of the root account.

The greeting message comes from the file \"/etc/motd\".

The programs included with the Debian GNU/Linux system are free software;
the exact distribution terms for each program are described in the
individual files in /usr/share/doc/*/copyright.

Now you are in the shell. The shell interprets your commands and runs the programs you name.
Each command you type is read, expanded and run, and its output is shown on the screen.
When you are done, type exit or press Ctrl-D to leave the shell and log out of the system.";

/// Its translation, keeping what a translator keeps.
const SHELL_ZH: &str = "shell 提示符

假设你的主机名为 foo，登录提示符如下所示。

foo login:

要重复执行一条命令，在提示符下输入 \"for x in foo1 foo2 foo3 ; do command ; done\"。
标记为 setuid root 的程序以 root 账户的权限运行。

欢迎信息来自文件 \"/etc/motd\"。

The programs included with the Debian GNU/Linux system are free software;
the exact distribution terms for each program are described in the
individual files in /usr/share/doc/*/copyright.

现在你在 shell 中了。shell 解释你的命令并运行你指定的程序。
你输入的每条命令都会被读取、展开并运行，其输出显示在屏幕上。
完成后，输入 exit 或按 Ctrl-D 离开 shell 并退出系统。";

#[test]
fn what_a_translation_shares_with_its_source_is_in_no_language() {
    // The command in plain quotes, `setuid root`, `foo login:` and the banner are set aside.
    let part = translated_part(SHELL_EN, SHELL_ZH);
    for kept in [
        "do command",
        "setuid root",
        "login",
        "free software",
        "copyright",
    ] {
        assert!(!part.contains(kept), "{kept} in {part}");
    }
    assert!(
        !crate::judge::junk::is_wrong_language(&part, "chinese"),
        "{part}"
    );
    // The banner is said (a passage kept in English), the kept terms are not.
    let doubts = translation(SHELL_EN, SHELL_ZH, "chinese");
    let said = detail(&doubts, "untranslated");
    assert!(said.contains("kept as they are"), "{doubts:?}");
    assert!(said.contains("distribution terms"), "{said}");
    assert!(!said.contains("setuid"), "{said}");
    // Without the banner, nothing is doubted.
    let cut = |t: &str| -> String {
        t.lines()
            .filter(|l| {
                !l.contains("programs") && !l.contains("distribution") && !l.contains("individual")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let doubts = translation(&cut(SHELL_EN), &cut(SHELL_ZH), "chinese");
    assert!(!checks(&doubts).contains(&"untranslated"), "{doubts:?}");
}

#[test]
fn a_half_copied_translation_is_still_judged_as_written() {
    // The first lines translated, the last three paragraphs copied.
    let zh: Vec<&str> = SHELL_ZH.lines().take(8).collect();
    let en: Vec<&str> = SHELL_EN.lines().skip(8).collect();
    let half = format!("{}\n{}", zh.join("\n"), en.join("\n"));
    let part = translated_part(SHELL_EN, &half);
    assert!(part.contains("interprets your commands"), "{part}");
    assert!(crate::judge::junk::is_wrong_language(&part, "chinese"));
    assert!(checks(&translation(SHELL_EN, &half, "chinese")).contains(&"untranslated"));
    // The source handed back whole is English through and through.
    assert!(crate::judge::junk::is_wrong_language(
        &translated_part(SHELL_EN, SHELL_EN),
        "chinese"
    ));
}

#[test]
fn words_shared_with_the_source_are_aligned_in_linear_work() {
    let source: String = (0..2_000)
        .map(|i| format!("The daemon number {i} reads its settings at start and writes a log.\n"))
        .collect();
    let answer: String = (0..20_000)
        .map(|i| format!("守护进程 {i} 启动时 reads its settings at start 并写日志。\n"))
        .collect();
    let work = Work::new(&|| false);
    let a = aligned(&source, &answer, &work);
    assert_eq!(a.lines.len(), 20_000);
    let read = (source.len() + answer.len()) as u64;
    assert!(
        work.done() <= 4 * read,
        "{} units for {read} bytes",
        work.done()
    );
}

#[test]
fn a_proofread_text_that_loses_a_line_or_changes_a_figure_is_doubted() {
    let rewritten = |answer: &str| super::rewritten(MEETING_ZH, answer, &|| false);
    // Corrected and kept whole, a table of numbered changes after it: nothing to doubt.
    let whole = format!(
        "{MEETING_ZH}\n\n| 序号 | 原文 | 修改 | 原因 |\n|---|---|---|---|\n| 1 | 参会人 | 参会人员 | 用词 |\n| 2 | 上午九点半 | 上午九点半 | 核对 |"
    );
    assert_eq!(rewritten(&whole), []);
    // A date made a heading is still the date, not a section number.
    let source = "Incident report, 14 October\n\nAt 09:12 the payment service stopped answering.\n";
    let headed = "## Incident Report\n\n#### 14 October\n\nAt 09:12 the payment service stopped answering.\n";
    assert_eq!(super::rewritten(source, headed, &|| false), []);
    // A time the notes do not hold, added under them.
    let doubts = rewritten(&format!("{MEETING_ZH}\n\n会议时间：4:00 PM"));
    assert_eq!(
        detail(&doubts, "figures"),
        "figures not in the source: 16:00 (4:00 PM)"
    );
    // The last line left out, and a rate changed.
    let lost = MEETING_ZH
        .replace("失败率0.8%", "失败率0.9%")
        .replace("\n下次会议：3月19日 下午三点", "");
    let doubts = rewritten(&lost);
    assert_eq!(checks(&doubts), ["figures"]);
    let said = detail(&doubts, "figures");
    assert!(
        said.starts_with("figures of the source missing:")
            && said.contains("0.8")
            && said.contains("19"),
        "{said}"
    );
}

#[test]
fn a_summary_of_lines_lifted_from_a_long_source_is_a_near_copy() {
    let source: String = (1..=30)
        .map(|i| {
            format!(
                "Package number {i} installs tool {i} and its manual page, kept in section {i}.\n"
            )
        })
        .collect::<String>()
        + "Debian integrates many independent free software projects into one system.\n";
    // Four of its five sentences are the source's lines, as they are or nearly.
    let lifted = "Debian is a system of packages.\n\
        - Package number 3 installs tool 3 and its manual page, kept in section 3.\n\
        - Package number 7 installs tool 7 and its manual page, kept in section 7.\n\
        - Package number 9 installs tool 9 and its own manual page, kept in section 9.\n\
        Debian integrates many independent free software projects into one system.";
    let doubts = condensed(&source, lifted);
    assert_eq!(checks(&doubts), ["near_copy"], "{doubts:?}");
    assert_eq!(
        detail(&doubts, "near_copy"),
        "a near-copy: 4 of its 5 sentences stand in the source as they are"
    );
    // A summary in its own words that quotes one line is a summary.
    let own = "The manual lists thirty packages, one tool and one manual section each. \
        Each package installs its tool together with the manual page. \
        Debian integrates many independent free software projects into one system.";
    assert_eq!(condensed(&source, own), []);
}
