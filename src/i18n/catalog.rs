//! The catalog: zhi's messages as English templates (the text `format!` writes, holes named)
//! and their Chinese. Keyed by the English, as gettext is by its msgid: a message is written
//! once, in English, where it arises, and found here where it is printed.
//!
//! A hole named in [`RECURSIVE`] holds a message or a word of one (the reason of a failure,
//! `a socket`) and is translated in turn; a hole in [`VERBATIM`] holds a name, a path, a
//! number, an identifier or someone else's text, and is kept. A hole whose name begins with
//! `_` is English grammar (a plural `s`) and has no place in the Chinese. A message with an
//! optional part (`{}` that may be empty) has one entry with the part and one without: a hole
//! never matches nothing. The tests in `coverage.rs` keep this file in step with the sources.

/// Holes whose text is itself a message (an error's reason, a vocabulary word): translated too.
pub const RECURSIVE: &[&str] = &[
    "reason",
    "e",
    "why",
    "what",
    "m",
    "w",
    "found",
    "pages",
    "advice",
    "hint",
    "shard_note",
    "limited",
    "arguments",
    "exit",
    "sig",
    "line_note",
    "tpm_label",
    "kind_text",
    "host_note",
];

/// Holes kept as they are: names, paths, numbers, identifiers, text of others. Every other
/// hole is kept too; the list is there so that the catalog's tests can ask each hole to be
/// one or the other on purpose.
#[cfg(test)]
pub const VERBATIM: &[&str] = &[
    "path",
    "file",
    "input",
    "dir",
    "name",
    "skill",
    "id",
    "run",
    "model",
    "url",
    "key",
    "value",
    "n",
    "count",
    "code",
    "label",
    "flag",
    "glob",
    "field",
    "var",
    "mode",
    "status",
    "signal",
    "tail",
    "server",
    "list",
    "chain",
    "page",
    "range",
    "total",
    "index",
    "src",
    "line",
    "column",
    "secs",
    "time",
    "size",
    "max",
    "min",
    "base",
    "requests",
    "bytes",
    "window",
    "tools",
    "engine",
    "ext",
    "format",
    "part",
    "number",
    "percent",
    "encoding",
    "panic",
    "want",
    "burst",
    "pid",
    "host",
    "started",
    "tokens",
    "cached",
    "pending",
    "pieces",
    "estimate",
    "budget",
    "prompt",
    "max_output",
    "floor",
    "old",
    "new",
    "call",
    "rel",
    "named",
    "kind",
    "target",
    "shown",
    "display",
    "choices",
    "type",
    "first",
    "restarts",
    "protocol",
    "expected",
    "limit",
    "formats",
    "i",
    "c",
    "clamped",
    "levels",
    "excerpt",
    "ids",
    "states",
    "answers",
    "collected",
    "submitted",
    "depth",
    "plan",
    "merged",
    "missing",
    "records",
    "sheet",
];

/// Names of log fields (`job=…`).
pub const FIELDS: &[(&str, &str)] = &[
    ("job", "任务"),
    ("error", "错误"),
    ("skill", "技能"),
    ("depth", "深度"),
    ("turn", "轮次"),
    ("turns", "轮数"),
    ("status", "状态"),
    ("tool", "工具"),
    ("refused", "已拒绝"),
    ("pieces", "段数"),
    ("piece", "段"),
    ("of", "共"),
    ("budget", "预算"),
    ("batch", "批次"),
    ("requests", "请求数"),
    ("kind", "类型"),
    ("context_window", "上下文窗口"),
    ("slots", "并发槽"),
    ("file_id", "文件编号"),
    ("attempt", "尝试"),
];

pub const ENTRIES: &[(&str, &str)] = &[
    // ---- The operating system's texts (`std::io::Error`), inside zhi's messages.
    (
        "No such file or directory (os error {code})",
        "没有那个文件或目录（系统错误 {code}）",
    ),
    (
        "Permission denied (os error {code})",
        "权限不足（系统错误 {code}）",
    ),
    (
        "Is a directory (os error {code})",
        "是一个目录（系统错误 {code}）",
    ),
    (
        "Not a directory (os error {code})",
        "不是目录（系统错误 {code}）",
    ),
    (
        "File exists (os error {code})",
        "文件已存在（系统错误 {code}）",
    ),
    (
        "Directory not empty (os error {code})",
        "目录非空（系统错误 {code}）",
    ),
    (
        "No space left on device (os error {code})",
        "设备上没有剩余空间（系统错误 {code}）",
    ),
    (
        "Read-only file system (os error {code})",
        "只读文件系统（系统错误 {code}）",
    ),
    (
        "Too many open files (os error {code})",
        "打开的文件过多（系统错误 {code}）",
    ),
    (
        "Operation not permitted (os error {code})",
        "不允许的操作（系统错误 {code}）",
    ),
    (
        "Too many levels of symbolic links (os error {code})",
        "符号链接层数过多（系统错误 {code}）",
    ),
    (
        "File name too long (os error {code})",
        "文件名过长（系统错误 {code}）",
    ),
    (
        "Invalid argument (os error {code})",
        "无效的参数（系统错误 {code}）",
    ),
    (
        "Input/output error (os error {code})",
        "输入/输出错误（系统错误 {code}）",
    ),
    (
        "Disk quota exceeded (os error {code})",
        "超出磁盘配额（系统错误 {code}）",
    ),
    (
        "Resource temporarily unavailable (os error {code})",
        "资源暂时不可用（系统错误 {code}）",
    ),
    (
        "Device or resource busy (os error {code})",
        "设备或资源忙（系统错误 {code}）",
    ),
    (
        "Cannot allocate memory (os error {code})",
        "无法分配内存（系统错误 {code}）",
    ),
    (
        "Broken pipe (os error {code})",
        "管道已断开（系统错误 {code}）",
    ),
    (
        "Connection refused (os error {code})",
        "连接被拒绝（系统错误 {code}）",
    ),
    (
        "Connection reset by peer (os error {code})",
        "连接被对方重置（系统错误 {code}）",
    ),
    (
        "Network is unreachable (os error {code})",
        "网络不可达（系统错误 {code}）",
    ),
    (
        "No route to host (os error {code})",
        "没有到主机的路由（系统错误 {code}）",
    ),
    (
        "Invalid cross-device link (os error {code})",
        "无效的跨设备链接（系统错误 {code}）",
    ),
    (
        "Text file busy (os error {code})",
        "文本文件忙（系统错误 {code}）",
    ),
    ("entity not found", "找不到对象"),
    ("permission denied", "权限不足"),
    ("unexpected end of file", "文件意外结束"),
    ("invalid data", "数据无效"),
    ("timed out", "超时"),
    ("other error", "其他错误"),
    ("failed to fill whole buffer", "数据不足，无法填满缓冲区"),
    ("exit status: {code}", "退出状态 {code}"),
    ("signal: {signal}", "信号 {signal}"),
    (
        "invalid utf-8 sequence of {n} bytes from index {index}",
        "从第 {index} 字节起有 {n} 字节无效的 UTF-8 序列",
    ),
    (
        "incomplete utf-8 byte sequence from index {index}",
        "从第 {index} 字节起的 UTF-8 字节序列不完整",
    ),
    // Rust's number parsing (`--rpm abc`).
    ("invalid digit found in string", "字符串中有无效的数字"),
    (
        "cannot parse integer from empty string",
        "无法从空字符串解析整数",
    ),
    (
        "number too large to fit in target type",
        "数值太大，超出目标类型的范围",
    ),
    (
        "number too small to fit in target type",
        "数值太小，超出目标类型的范围",
    ),
    ("invalid float literal", "无效的浮点数"),
    // Words other messages are built from.
    ("a character device", "字符设备"),
    ("a block device", "块设备"),
    ("a FIFO (named pipe)", "FIFO（命名管道）"),
    ("a socket", "套接字"),
    ("not a regular file", "不是普通文件"),
    ("nothing", "空值"),
    ("a boolean", "布尔值"),
    ("a number", "数字"),
    ("a string", "字符串"),
    ("a list", "列表"),
    ("a mapping", "映射"),
    ("a tagged value", "带标签的值"),
    ("image", "图片"),
    ("page {page}", "第 {page} 页"),
    ("pages {range}", "第 {range} 页"),
    ("page {page} has", "第 {page} 页"),
    ("pages {range} have", "第 {range} 页"),
    // ---- Settings (zhi.yaml, ~/.config/zhi/config.yaml, ZHI_* variables).
    (
        "config file {path} does not exist",
        "配置文件 {path} 不存在",
    ),
    ("config file {path}: {m}", "配置文件 {path}：{m}"),
    (
        "config file {path}: non-string key ignored",
        "配置文件 {path}：已忽略非字符串的键",
    ),
    (
        "config file {path}: unknown field `retry.{field}` ignored",
        "配置文件 {path}：已忽略未知字段 `retry.{field}`",
    ),
    (
        "config file {path}: unknown field `batch.{field}` ignored",
        "配置文件 {path}：已忽略未知字段 `batch.{field}`",
    ),
    (
        "config file {path}: unknown setting `{key}` ignored",
        "配置文件 {path}：已忽略未知设置 `{key}`",
    ),
    (
        "config file {path} holds an API key but has mode {mode}; run `chmod 600 {path}`",
        "配置文件 {path} 含有 API 密钥，但权限是 {mode}；请运行 `chmod 600 {path}`",
    ),
    (
        "concurrency `{value}` must be a number from 1 to 1024, or auto",
        "`concurrency` 的值 `{value}` 必须是 1 到 1024 之间的数，或 `auto`",
    ),
    (
        "`{value}` is not zhipu or openai",
        "`{value}` 不是 `zhipu` 或 `openai`",
    ),
    ("`{value}` is not en or zh", "`{value}` 不是 `en` 或 `zh`"),
    (
        "--timeout must be at least 1 second",
        "--timeout 至少为 1 秒",
    ),
    (
        "base URL `{url}` must start with http:// or https://",
        "基础 URL `{url}` 必须以 http:// 或 https:// 开头",
    ),
    (
        "no API key: set {var} (export {var}=your-key), or put `api_key:` in ~/.config/zhi/config.yaml (mode 0600); a local server (--base-url http://127.0.0.1:PORT/v1) needs none",
        "没有 API 密钥：请设置 {var}（`export {var}=你的密钥`），或在 ~/.config/zhi/config.yaml 中写入 `api_key:`（权限 0600）；本地服务器（--base-url http://127.0.0.1:PORT/v1）不需要密钥",
    ),
    ("expected a mapping of settings", "应为设置项的映射"),
    ("`{key}` must be a single value", "`{key}` 必须是单个值"),
    ("`{key}` must be a whole number", "`{key}` 必须是整数"),
    (
        "provider `{value}` is not zhipu or openai",
        "`provider` 的值 `{value}` 不是 `zhipu` 或 `openai`",
    ),
    (
        "language `{value}` is not en or zh",
        "`language` 的值 `{value}` 不是 `en` 或 `zh`",
    ),
    ("log_level: {m}", "log_level：{m}"),
    ("timeout must be at least 1 second", "`timeout` 至少为 1 秒"),
    (
        "ocr `{value}` is not one of auto, tesseract, glm-ocr, file-extract, vision, off",
        "`ocr` 的值 `{value}` 不是 `auto`、`tesseract`、`glm-ocr`、`file-extract`、`vision`、`off` 之一",
    ),
    (
        "temperature must be a number from 0 to 2",
        "`temperature` 必须是 0 到 2 之间的数",
    ),
    ("`retry` must be a mapping", "`retry` 必须是映射"),
    (
        "retry.{field} must be a whole number",
        "retry.{field} 必须是整数",
    ),
    (
        "retry.max_attempts {n} must be at least 1 (the first attempt counts)",
        "retry.max_attempts 为 {n}，至少应为 1（第一次尝试也计在内）",
    ),
    (
        "retry.max_delay_ms {max} is below retry.base_delay_ms {base}: the longest wait cannot be shorter than the first",
        "retry.max_delay_ms（{max}）小于 retry.base_delay_ms（{base}）：最长的等待不能短于第一次等待",
    ),
    ("`batch` must be a mapping", "`batch` 必须是映射"),
    (
        "batch.{field} must be a whole number of at least 1",
        "batch.{field} 必须是不小于 1 的整数",
    ),
    (
        "batch.{field} {n} is above the provider's limit ({requests} requests, {bytes} bytes a file)",
        "batch.{field} 为 {n}，超过了服务商的上限（每个文件 {requests} 个请求、{bytes} 字节）",
    ),
    (
        "`models` must map model names to budgets",
        "`models` 必须是从模型名到预算的映射",
    ),
    ("model names must be strings", "模型名必须是字符串"),
    ("not UTF-8 text ({e})", "不是 UTF-8 文本（{e}）"),
    (
        "is a symbolic link to nothing; remove it or point it at a settings file",
        "是指向不存在目标的符号链接；请删除它，或让它指向一个设置文件",
    ),
    (
        "`{value}` is not one of {choices}",
        "`{value}` 不是 {choices} 之一",
    ),
    (
        "{key} must be a whole number of at least 1 and at most {max} (leave it out for no limit), found {found}",
        "{key} 必须是 1 到 {max} 之间的整数（不设上限时请省略），实际是 {found}",
    ),
    (
        "models.{name} must be a mapping such as {{context_window: 128000, max_output: 4096}}, found {found}",
        "models.{name} 必须是形如 {{context_window: 128000, max_output: 4096}} 的映射，实际是{found}",
    ),
    (
        "unknown field `models.{name}.{field}` ignored",
        "已忽略未知字段 `models.{name}.{field}`",
    ),
    (
        "models.{name}.{field} must be a whole number of tokens, found {found}",
        "models.{name}.{field} 必须是令牌数（整数），实际是 {found}",
    ),
    (
        "models.{name}.{field} {n} must be at least 1 and fit 32 bits",
        "models.{name}.{field} 为 {n}，必须至少为 1 且不超过 32 位",
    ),
    (
        "models.{name}: max_output {max} must be smaller than context_window {window} (the document shares the window with the answer)",
        "models.{name}：max_output（{max}）必须小于 context_window（{window}）（文档与回答共用这个窗口）",
    ),
    ("tpm {n} (config file {path})", "tpm {n}（配置文件 {path}）"),
    // Values of `zhi config show`.
    ("unlimited", "不限"),
    ("<redacted>", "<已隐藏>"),
    ("(not set; export {var})", "（未设置；`export {var}`）"),
    ("(each skill's)", "（各技能自己的）"),
    ("(server default)", "（服务器默认）"),
    (
        "{n} attempts, base {base}ms, cap {max}ms",
        "{n} 次尝试，起始 {base}ms，上限 {max}ms",
    ),
    // ---- Command-line values.
    (
        "cannot read the current folder: {e}",
        "无法读取当前文件夹：{e}",
    ),
    (
        "--budget-tokens must be at least 1 (leave it out for no budget)",
        "--budget-tokens 至少为 1（不限预算时请省略）",
    ),
    (
        "--limit must be at least 1 (a run of no jobs does nothing; `zhi plan` shows the plan)",
        "--limit 至少为 1（不含任务的运行什么也不做；`zhi plan` 可查看计划）",
    ),
    (
        "--max-failures must be at least 1 (--fail-fast stops at the first failure; leave it out for no limit)",
        "--max-failures 至少为 1（--fail-fast 在第一次失败时停止；不设上限时请省略）",
    ),
    ("--concurrency: {e}", "--concurrency：{e}"),
    ("--rpm must be at least 1", "--rpm 至少为 1"),
    ("--tpm must be at least 1", "--tpm 至少为 1"),
    (
        "--jobs takes its inputs from the jobs file; give no INPUT",
        "--jobs 从任务文件读取输入；不要再给出 INPUT",
    ),
    (
        "no inputs: give files, folders or quoted globs, e.g. `zhi run {skill} docs/`",
        "没有输入：请给出文件、文件夹或加了引号的通配符，例如 `zhi run {skill} docs/`",
    ),
    (
        "--arg `{value}` must be KEY=VALUE",
        "--arg `{value}` 必须写成 KEY=VALUE",
    ),
    (
        "skill `{skill}` has no argument `{key}` (its arguments: {arguments})",
        "技能 `{skill}` 没有参数 `{key}`（它的参数：{arguments}）",
    ),
    ("none besides the input", "除输入外没有"),
    (
        "`{key}` is the skill's input: give it as a path, not with --arg",
        "`{key}` 是技能的输入：请直接给出路径，不要用 --arg",
    ),
    (
        "--arg {key}=`{value}` must be a number",
        "--arg {key}=`{value}` 必须是数字",
    ),
    (
        "--arg {key}=`{value}` must be true or false",
        "--arg {key}=`{value}` 必须是 `true` 或 `false`",
    ),
    (
        "skill `{skill}` needs --arg {key}=… ({type})",
        "技能 `{skill}` 需要 --arg {key}=…（{type}）",
    ),
    (
        "skill `{skill}` needs --arg {key}=… ({type}; a template like {{dir}}/{{stem}}.old{{ext}} names a file beside each input)",
        "技能 `{skill}` 需要 --arg {key}=…（{type}；像 {{dir}}/{{stem}}.old{{ext}} 这样的模板指向每个输入旁边的文件）",
    ),
    (
        "{name} `{shown}` for {display} does not exist",
        "{name} `{shown}`（用于 {display}）不存在",
    ),
    (
        "--shard `{value}` must be M/N with 1 <= M <= N (optionally hash:M/N or slice:M/N)",
        "--shard `{value}` 必须写成 M/N，且 1 <= M <= N（也可写 hash:M/N 或 slice:M/N）",
    ),
    (
        "{var}=`{value}` is not a whole number",
        "{var}=`{value}` 不是整数",
    ),
    (
        "{src}: shard {index} of {total} is out of range",
        "{src}：第 {index}/{total} 个分片超出范围",
    ),
    (
        "JOB_COMPLETION_INDEX is set but ZHI_SHARD_TOTAL is not: set ZHI_SHARD_TOTAL to the Job's completions (or pass --shard M/N)",
        "设置了 JOB_COMPLETION_INDEX，却没有设置 ZHI_SHARD_TOTAL：请把 ZHI_SHARD_TOTAL 设为该 Job 的 `completions` 数（或使用 --shard M/N）",
    ),
    // ---- Inputs and plans.
    ("glob `{glob}`: {e}", "通配符 `{glob}`：{e}"),
    (
        "glob `{glob}`: folder {path} does not exist",
        "通配符 `{glob}`：文件夹 {path} 不存在",
    ),
    (
        "glob `{glob}` matched nothing",
        "通配符 `{glob}` 没有匹配到任何文件",
    ),
    (
        "error parsing glob '{glob}': {reason}",
        "解析通配符 '{glob}' 出错：{reason}",
    ),
    (
        "unclosed character class; missing ']'",
        "字符类没有闭合；缺少 ']'",
    ),
    (
        "unclosed alternate group; missing '}}'",
        "候选组没有闭合；缺少 '}}'",
    ),
    (
        "invalid use of **; must be one path component",
        "** 的用法无效；它必须单独构成路径的一段",
    ),
    ("input `{input}` does not exist", "输入 `{input}` 不存在"),
    (
        "input `{input}` is inside the output folder {path}",
        "输入 `{input}` 位于输出文件夹 {path} 之内",
    ),
    (
        "input `{input}` is a file, but this skill takes folders",
        "输入 `{input}` 是文件，而这个技能处理的是文件夹",
    ),
    ("symbolic link loop", "符号链接循环"),
    ("cannot read {path}: {e}", "无法读取 {path}：{e}"),
    (
        "skipping symbolic link {path} (use --follow-links)",
        "跳过符号链接 {path}（需要时请用 --follow-links）",
    ),
    (
        "broken symbolic link {path} -> {target}: {e}",
        "损坏的符号链接 {path} -> {target}：{e}",
    ),
    (
        "{path} is {what}, not a document zhi can read",
        "{path} 是{what}，不是 zhi 能读的文档",
    ),
    (
        "no inputs: nothing matched the given paths (hidden files need --hidden; the output folder is never an input)",
        "没有输入：给出的路径什么也没匹配到（隐藏文件需要 --hidden；输出文件夹永远不会作为输入）",
    ),
    (
        "jobs file: argument `{key}` of skill `{skill}` must be a single value",
        "任务文件：技能 `{skill}` 的参数 `{key}` 必须是单个值",
    ),
    ("jobs file {path}: {m}", "任务文件 {path}：{m}"),
    (
        "unknown field `{key}`{line_note}; a jobs file holds `jobs:` with a list of jobs",
        "未知字段 `{key}`{line_note}；任务文件应包含 `jobs:` 及其下的任务列表",
    ),
    (
        "unknown field `{key}`; a jobs file holds `jobs:` with a list of jobs",
        "未知字段 `{key}`；任务文件应包含 `jobs:` 及其下的任务列表",
    ),
    (" at line {line}", "（第 {line} 行）"),
    (
        "expected `jobs:` with a list of jobs, or a list of jobs (each with `skill` and `inputs`)",
        "应为 `jobs:` 加任务列表，或直接是任务列表（每项含 `skill` 和 `inputs`）",
    ),
    ("jobs file {path}: no jobs", "任务文件 {path}：没有任务"),
    (
        "jobs file {path}: entry {n} (skill `{skill}`) has no inputs",
        "任务文件 {path}：第 {n} 项（技能 `{skill}`）没有输入",
    ),
    (
        "{tpm_label} is below what one request needs: a request to {model} (skill `{skill}`) reserves {max_output} tokens for its answer (max_output) and about {prompt} for its prompt, and carries at least {min} tokens of the document; {advice}, or set a smaller max_output for {model} under `models:` in the settings",
        "{tpm_label} 低于一次请求所需：发给 {model} 的请求（技能 `{skill}`）为回答预留 {max_output} 个令牌（max_output），为提示词预留约 {prompt} 个，并且至少携带 {min} 个文档令牌；{advice}，或在设置的 `models:` 下为 {model} 设置更小的 max_output",
    ),
    (
        "set `tpm: {floor}` or more in {path}",
        "请在 {path} 中设置 `tpm: {floor}` 或更大的值",
    ),
    (
        "give --tpm {floor} or more",
        "请使用 --tpm {floor} 或更大的值",
    ),
    ("this shard has no jobs", "此分片没有任务"),
    // What `zhi plan` says under its table.
    (
        "{n} job(s): {cached} cached, {pending} to run, about {tokens} input tokens to send{shard_note}",
        "{n} 个任务：{cached} 个已缓存，{pending} 个待运行，约需发送 {tokens} 个输入令牌{shard_note}",
    ),
    (
        "{n} job(s): {cached} cached, {pending} to run, about {tokens} input tokens to send",
        "{n} 个任务：{cached} 个已缓存，{pending} 个待运行，约需发送 {tokens} 个输入令牌",
    ),
    (" (shard {label})", "（分片 {label}）"),
    (
        "{input}: too large for one request, and its skill does not split documents (too_large)",
        "{input}：对一次请求来说太大，而它的技能不拆分文档（too_large）",
    ),
    (
        "{input}: long document, split into about {pieces} pieces",
        "{input}：长文档，将拆成约 {pieces} 段",
    ),
    (
        "token estimate: CJK characters count 1 token each, other text 1 token per 4 characters; PDFs, office files and images are estimated from file size",
        "令牌估算：每个中日韩字符计 1 个令牌，其他文字每 4 个字符计 1 个令牌；PDF、办公文档和图片按文件大小估算",
    ),
    // ---- Skills.
    (
        "unknown skill `{skill}`; `zhi skills list` shows the available ones",
        "未知技能 `{skill}`；`zhi skills list` 会列出可用的技能",
    ),
    ("unknown skill `{skill}`", "未知技能 `{skill}`"),
    (
        "skill `{skill}` cannot be loaded: {e}",
        "技能 `{skill}` 无法加载：{e}",
    ),
    (
        "skill `{skill}` is invalid: {e}",
        "技能 `{skill}` 无效：{e}",
    ),
    ("skipped skill file {e}", "已跳过技能文件 {e}"),
    (
        "invalid skill name `{name}`: {reason}",
        "无效的技能名 `{name}`：{reason}",
    ),
    (
        "{path} already exists; not overwritten",
        "{path} 已存在；未覆盖",
    ),
    (
        "{path}: is a folder without a SKILL.md, not a skill",
        "{path}：是没有 SKILL.md 的文件夹，不是技能",
    ),
    (
        "{label}: file name does not match the skill name `{name}`",
        "{label}：文件名与技能名 `{name}` 不一致",
    ),
    (
        "{label}: {rel} is larger than {size}, the limit for a skill's resource; it is not readable",
        "{label}：{rel} 超过了技能资源的上限 {size}；不可读取",
    ),
    (
        "its instructions use {named}, which zhi will not run (there is no shell)",
        "它的说明用到了 {named}，zhi 不会运行它（没有 shell）",
    ),
    (
        "more than {n} files; the rest are not read",
        "超过 {n} 个文件；其余的不读取",
    ),
    (
        "{path}: cannot read skill folder: {e}",
        "{path}：无法读取技能文件夹：{e}",
    ),
    (
        "skill `{skill}`: unknown tool or skill `{name}` (tools are {tools}, or other skills' names)",
        "技能 `{skill}`：未知的工具或技能 `{name}`（工具有 {tools}，或其他技能的名字）",
    ),
    ("skill cycle: {chain}", "技能循环：{chain}"),
    (
        "skills nest deeper than {max}: {chain}",
        "技能嵌套超过 {max} 层：{chain}",
    ),
    (
        "empty file: a skill needs at least name, description, system_prompt and tools",
        "空文件：技能至少需要 `name`、`description`、`system_prompt` 和 `tools`",
    ),
    (
        "binary file (contains NUL bytes), not a YAML skill",
        "二进制文件（含有 NUL 字节），不是 YAML 技能",
    ),
    (
        "not UTF-8 text ({e}); skill files must be UTF-8 YAML",
        "不是 UTF-8 文本（{e}）；技能文件必须是 UTF-8 编码的 YAML",
    ),
    (
        "expected a YAML mapping of skill fields, found {found}",
        "应为技能字段的 YAML 映射，实际是{found}",
    ),
    ("unknown field `{key}` ignored", "已忽略未知字段 `{key}`"),
    ("non-string key {key} ignored", "已忽略非字符串的键 {key}"),
    (
        "binary file (contains NUL bytes), not a SKILL.md",
        "二进制文件（含有 NUL 字节），不是 SKILL.md",
    ),
    (
        "not UTF-8 text ({e}); SKILL.md must be UTF-8",
        "不是 UTF-8 文本（{e}）；SKILL.md 必须是 UTF-8 编码",
    ),
    (
        "no front matter: SKILL.md must start with a `---` line, the YAML fields (name, description), and a closing `---` line",
        "没有前置元数据：SKILL.md 必须以一行 `---` 开头，接着是 YAML 字段（`name`、`description`），再以一行 `---` 结束",
    ),
    ("front matter: {e}", "前置元数据：{e}"),
    (
        "the front matter must be a YAML mapping of fields, found {found}",
        "前置元数据必须是字段的 YAML 映射，实际是{found}",
    ),
    (
        "unknown front-matter field `{key}` ignored",
        "已忽略未知的前置元数据字段 `{key}`",
    ),
    (
        "missing required front-matter field `{key}`",
        "缺少必需的前置元数据字段 `{key}`",
    ),
    (
        "no instructions: the Markdown after the front matter is the skill's prompt",
        "没有说明：前置元数据之后的 Markdown 就是技能的提示词",
    ),
    ("missing required field `{key}`", "缺少必需字段 `{key}`"),
    ("missing required field `tools`", "缺少必需字段 `tools`"),
    ("field `{key}` is empty", "字段 `{key}` 为空"),
    (
        "field `{key}` must be a string, found {found}",
        "字段 `{key}` 必须是字符串，实际是{found}",
    ),
    (
        "invalid name `{name}`: {reason}",
        "无效的名字 `{name}`：{reason}",
    ),
    ("tool `{name}` listed twice", "工具 `{name}` 列出了两次"),
    (
        "`tools` entries must be tool or skill names, found {found}",
        "`tools` 的条目必须是工具名或技能名，实际是{found}",
    ),
    (
        "field `tools` must be a list of names, found {found}",
        "字段 `tools` 必须是名字的列表，实际是{found}",
    ),
    (
        "max_turns {n} is outside {min}..={max}; clamped to {clamped}",
        "max_turns {n} 超出 {min}..={max}；已改为 {clamped}",
    ),
    (
        "max_turns must be a whole number, found {found}",
        "max_turns 必须是整数，实际是{found}",
    ),
    (
        "unknown field `output.{key}` ignored",
        "已忽略未知字段 `output.{key}`",
    ),
    (
        "non-string key {key} in `output` ignored",
        "已忽略 `output` 中非字符串的键 {key}",
    ),
    (
        "`output.language` must be a string, found {found}",
        "`output.language` 必须是字符串，实际是{found}",
    ),
    (
        "field `output` must be a mapping, found {found}",
        "字段 `output` 必须是映射，实际是{found}",
    ),
    (
        "chunking `{value}` is not one of none, map, map-reduce",
        "`chunking` 的值 `{value}` 不是 `none`、`map`、`map-reduce` 之一",
    ),
    (
        "field `input` must be a mapping, found {found}",
        "字段 `input` 必须是映射，实际是{found}",
    ),
    (
        "input.args[{i}] must be a mapping with name and type, found {found}",
        "input.args[{i}] 必须是含 `name` 和 `type` 的映射，实际是{found}",
    ),
    (
        "input.args[{i}]: argument name `{name}` may only hold letters, digits, `_` and `-`",
        "input.args[{i}]：参数名 `{name}` 只能包含字母、数字、`_` 和 `-`",
    ),
    (
        "input.args: argument `{name}` is declared twice",
        "input.args：参数 `{name}` 声明了两次",
    ),
    (
        "input.args `{name}`: type must be a string, found {found}",
        "input.args `{name}`：`type` 必须是字符串，实际是{found}",
    ),
    (
        "input.args `{name}`: required must be true or false, found {found}",
        "input.args `{name}`：`required` 必须是 `true` 或 `false`，实际是{found}",
    ),
    (
        "input.args `{name}`: default must be a scalar, found {found}",
        "input.args `{name}`：`default` 必须是标量，实际是{found}",
    ),
    (
        "input.args `{name}`: unknown field `{key}` ignored",
        "input.args `{name}`：已忽略未知字段 `{key}`",
    ),
    (
        "input.args must be a list, found {found}",
        "input.args 必须是列表，实际是{found}",
    ),
    ("empty", "为空"),
    ("longer than 64 characters", "超过 64 个字符"),
    ("must start with a letter or digit", "必须以字母或数字开头"),
    (
        "character {c} not allowed (letters, digits, `_` and `-` only)",
        "不允许字符 {c}（只能用字母、数字、`_` 和 `-`）",
    ),
    (
        "`output.files` must be a list of file names, found {found}",
        "`output.files` 必须是文件名的列表，实际是{found}",
    ),
    (
        "`output.files` entries must be file names, found {found}",
        "`output.files` 的条目必须是文件名，实际是{found}",
    ),
    (
        "`output.files` entry {name} must be a relative file name inside the job's folder (no `..`, no absolute path)",
        "`output.files` 的条目 {name} 必须是任务文件夹内的相对文件名（不能有 `..`，不能是绝对路径）",
    ),
    (
        "`output.files` names {name} twice",
        "`output.files` 两次列出了 {name}",
    ),
    (
        "YAML syntax error at line {line} column {column}: {e}",
        "YAML 语法错误（第 {line} 行第 {column} 列）：{e}",
    ),
    ("YAML syntax error: {e}", "YAML 语法错误：{e}"),
    // ---- Small files zhi reads whole (settings, jobs files, skills, locks).
    ("does not exist", "不存在"),
    ("{path} does not exist", "{path} 不存在"),
    ("is a folder, not a file", "是文件夹，不是文件"),
    ("is {what}, not a regular file", "是{what}，不是普通文件"),
    (
        "is larger than {size}, the limit for this kind of file",
        "超过了这类文件的上限 {size}",
    ),
    ("cannot read: {e}", "无法读取：{e}"),
    (
        "YAML nested deeper than {max} levels at line {line}; refused before parsing",
        "YAML 在第 {line} 行嵌套超过 {max} 层；解析前已拒绝",
    ),
    (
        "is a symbolic link to nothing",
        "是指向不存在目标的符号链接",
    ),
    // ---- Documents and extraction.
    (
        "this is an image and OCR is off (--ocr off); choose an engine with --ocr",
        "这是图片，而 OCR 已关闭（`--ocr off`）；请用 --ocr 选择一个引擎",
    ),
    (
        "{engine} found no text in the image",
        "{engine} 在图片中没有找到文字",
    ),
    ("cannot open the image: {e}", "无法打开图片：{e}"),
    ("cannot read the image: {e}", "无法读取图片：{e}"),
    (
        "not an image zhi can decode (png, jpeg, gif, webp, tiff, bmp)",
        "不是 zhi 能解码的图片（png、jpeg、gif、webp、tiff、bmp）",
    ),
    ("cannot decode the image: {e}", "无法解码图片：{e}"),
    ("the image is empty (0 pixels)", "图片是空的（0 像素）"),
    (
        "cannot create a scratch folder: {e}",
        "无法创建临时文件夹：{e}",
    ),
    ("cannot write the PNG: {e}", "无法写入 PNG：{e}"),
    ("image: {e}", "图片：{e}"),
    (
        "the image cannot be made smaller than the engine's {limit} MiB limit",
        "图片无法缩小到引擎 {limit} MiB 的上限以内",
    ),
    (
        "OCR reads images and PDFs, not {kind} files",
        "OCR 只读图片和 PDF，不读 {kind} 文件",
    ),
    ("unsupported file type .{ext}", "不支持的文件类型 .{ext}"),
    (
        "unsupported file type (no extension)",
        "不支持的文件类型（没有扩展名）",
    ),
    (
        "{what}: zhi reads text files, PDF, docx, pptx, xlsx, xls, ods and images (png, jpg, gif, webp, tiff, bmp)",
        "{what}：zhi 能读文本文件、PDF、docx、pptx、xlsx、xls、ods 和图片（png、jpg、gif、webp、tiff、bmp）",
    ),
    (
        "file is {size} MiB; zhi reads at most {max} MiB of this kind into memory",
        "文件有 {size} MiB；这类文件 zhi 最多读入 {max} MiB 到内存",
    ),
    (
        "broken symbolic link: its target does not exist",
        "损坏的符号链接：它的目标不存在",
    ),
    ("no such file", "没有这个文件"),
    ("cannot read the file: {e}", "无法读取文件：{e}"),
    ("cannot open the file: {e}", "无法打开文件：{e}"),
    ("is a directory, not a file", "是目录，不是文件"),
    (
        "not a regular file (a device, fifo or socket)",
        "不是普通文件（设备、FIFO 或套接字）",
    ),
    ("empty file (0 bytes)", "空文件（0 字节）"),
    (
        "no text: the file holds only whitespace",
        "没有文字：文件只含空白",
    ),
    ("it contains NUL bytes", "它含有 NUL 字节"),
    (
        "{percent}% of it is control characters or undecodable bytes as {encoding}",
        "按 {encoding} 解码时，其中 {percent}% 是控制字符或无法解码的字节",
    ),
    ("binary file: {why}", "二进制文件：{why}"),
    (
        "the {format} parser crashed: {panic}",
        "{format} 解析器崩溃：{panic}",
    ),
    ("no text found in the document", "文档中没有找到文字"),
    (
        "not a readable {format} file (broken zip archive: {e})",
        "不是可读的 {format} 文件（zip 压缩包已损坏：{e}）",
    ),
    (
        "cannot read {name} from the archive: {e}",
        "无法从压缩包中读取 {name}：{e}",
    ),
    ("cannot decompress {name}: {e}", "无法解压 {name}：{e}"),
    (
        "{name} decompresses to more than {max} MiB",
        "{name} 解压后超过 {max} MiB",
    ),
    ("{name} is not UTF-8 XML", "{name} 不是 UTF-8 编码的 XML"),
    (
        "not a Word document: word/document.xml is missing",
        "不是 Word 文档：缺少 word/document.xml",
    ),
    ("word/document.xml: {e}", "word/document.xml：{e}"),
    ("the presentation has no slides", "演示文稿中没有幻灯片"),
    (
        "slide {number} ({part}) is missing",
        "缺少第 {number} 张幻灯片（{part}）",
    ),
    ("not a readable spreadsheet: {e}", "不是可读的电子表格：{e}"),
    ("the workbook has no sheets", "工作簿中没有工作表"),
    ("sheet {sheet}: {e}", "工作表 {sheet}：{e}"),
    // PDFs: what the extractors found, and why a document could not be read.
    (
        "no text found in {count} page{_s}",
        "{count} 页中没有找到文字",
    ),
    ("no text found in {count} page", "{count} 页中没有找到文字"),
    (
        "no text found in {count} page{_s} ({m})",
        "{count} 页中没有找到文字（{m}）",
    ),
    (
        "no text found in {count} page ({m})",
        "{count} 页中没有找到文字（{m}）",
    ),
    ("cannot read the PDF: {reason}", "无法读取 PDF：{reason}"),
    ("the PDF worker read no page", "PDF 工作进程一页也没有读到"),
    ("pdftotext: {e}", "pdftotext：{e}"),
    ("pdftotext gave no answer", "pdftotext 没有给出结果"),
    ("pdftotext: a reader panicked", "pdftotext：读取线程崩溃"),
    ("cannot open the document", "无法打开文档"),
    (
        "the document forbids copying its text",
        "文档禁止复制其中的文字",
    ),
    ("cannot run: {e}", "无法运行：{e}"),
    ("failed ({exit})", "失败（{exit}）"),
    ("failed ({exit}): {tail}", "失败（{exit}）：{tail}"),
    (
        "the PDF worker {reason} checking the pages",
        "PDF 工作进程在检查页面时{reason}",
    ),
    (
        "the PDF worker {reason} while loading it",
        "PDF 工作进程在载入文档时{reason}",
    ),
    (
        "pdf-extract and lopdf cannot read the document ({why}); its text is pdftotext's, unchecked",
        "pdf-extract 和 lopdf 都无法读取该文档（{why}）；文字来自 pdftotext，未经核对",
    ),
    (
        "{pages}: pdftotext found less than the page draws; pdf-extract or lopdf found more",
        "{pages}：pdftotext 找到的文字少于页面所绘；pdf-extract 或 lopdf 找到的更多",
    ),
    (
        "pdf-extract worker {reason} at page {page}; pages {page}–{count} left to the next extractor",
        "pdf-extract 工作进程在第 {page} 页{reason}；第 {page}–{count} 页留给下一个提取器",
    ),
    (
        "pdf-extract worker {reason}",
        "pdf-extract 工作进程{reason}",
    ),
    ("lopdf worker {reason}", "lopdf 工作进程{reason}"),
    (
        "the PDF worker crashed {restarts} times; pages {first}–{count} left to the next extractor",
        "PDF 工作进程崩溃了 {restarts} 次；第 {first}–{count} 页留给下一个提取器",
    ),
    (
        "{pages}: text from lopdf (pdf-extract failed or found too little)",
        "{pages}：文字来自 lopdf（pdf-extract 失败或找到的太少）",
    ),
    (
        "{pages}: every extractor found less than half of the text the page draws (page {page}: {n} characters of {count} glyphs); the model is not given all of it",
        "{pages}：每个提取器找到的文字都不到页面所绘的一半（第 {page} 页：{count} 个字形中只有 {n} 个字符）；模型拿不到全部文字",
    ),
    ("OCR is off (--ocr off)", "OCR 已关闭（`--ocr off`）"),
    (
        "{pages} no usable text; OCR is off",
        "{pages}没有可用的文字；OCR 已关闭",
    ),
    (
        "{pages} no usable text and cannot be OCR'd: {e}",
        "{pages}没有可用的文字，且无法进行 OCR：{e}",
    ),
    ("{pages}: OCR ({engine})", "{pages}：OCR（{engine}）"),
    ("OCR failed: {e}", "OCR 失败：{e}"),
    // How the PDF worker ended.
    (
        "crashed ({sig}, signal {signal})",
        "崩溃了（{sig}，信号 {signal}）",
    ),
    (
        "crashed ({sig}, signal {signal}): {tail}",
        "崩溃了（{sig}，信号 {signal}）：{tail}",
    ),
    (
        "SIGKILL, perhaps the system ran out of memory",
        "SIGKILL，可能是系统内存耗尽",
    ),
    ("a signal", "某个信号"),
    ("timed out after {time}", "超时（{time}）"),
    ("printed more than {n} MiB", "输出超过了 {n} MiB"),
    ("was cancelled", "被取消了"),
    (
        "overflowed its stack (endless recursion in the document)",
        "栈溢出了（文档中有无穷递归）",
    ),
    (
        "ran out of memory (limit {n} MiB)",
        "内存耗尽了（上限 {n} MiB）",
    ),
    ("panicked: {tail}", "崩溃了：{tail}"),
    ("ended without finishing its output", "没有写完输出就结束了"),
    ("exited with code {code}", "以退出码 {code} 结束了"),
    (
        "exited with code {code}: {tail}",
        "以退出码 {code} 结束了：{tail}",
    ),
    ("ended abnormally: {tail}", "异常结束了：{tail}"),
    (
        "could not be started ({path}: {e})",
        "无法启动（{path}：{e}）",
    ),
    (
        "speaks {protocol}, not {expected}",
        "使用的协议是 {protocol}，不是 {expected}",
    ),
    (
        "printed something that is not the worker protocol (is {path} a zhi binary?)",
        "输出了不属于工作进程协议的内容（{path} 是 zhi 程序吗？）",
    ),
    ("unknown --mode {value}", "未知的 --mode {value}"),
    ("unexpected argument {value}", "意外的参数 {value}"),
    // lopdf's texts for a PDF it cannot parse.
    ("cannot parse the PDF: {e}", "无法解析 PDF：{e}"),
    (
        "failed parsing cross reference table: {reason}",
        "解析交叉引用表失败：{reason}",
    ),
    ("invalid start value", "起始值无效"),
    (
        "invalid start value in Prev field",
        "Prev 字段中的起始值无效",
    ),
    ("invalid start value of XRefStm", "XRefStm 的起始值无效"),
    ("invalid file header", "文件头无效"),
    ("invalid file trailer", "文件尾无效"),
    ("invalid cross reference table", "交叉引用表无效"),
    ("unexpected end of input", "输入意外结束"),
    ("invalid content stream", "内容流无效"),
    ("missing xref entry", "缺少 xref 条目"),
    ("invalid byte offset", "字节偏移无效"),
    ("couldn't parse input: {reason}", "无法解析输入：{reason}"),
    ("PDF document is not encrypted", "PDF 文档没有加密"),
    ("invalid password for encrypted PDF", "加密 PDF 的密码无效"),
    ("decryption error: {reason}", "解密错误：{reason}"),
    ("unsupported security handler", "不支持的安全处理程序"),
    ("object ID {id} {n} not found", "找不到对象 ID {id} {n}"),
    (
        "reference cycle with object ID {id} {n}",
        "对象 ID {id} {n} 存在循环引用",
    ),
    (
        "dereferencing object reached limit, may indicate a reference cycle",
        "解引用对象达到上限，可能存在循环引用",
    ),
    (
        "invalid indirect object at byte offset {n}",
        "字节偏移 {n} 处的间接对象无效",
    ),
    ("IO error: {e}", "读写错误：{e}"),
    // ---- OCR.
    (
        "could not delete the file uploaded for OCR; the account holds at most 100 files, delete it in the API console",
        "无法删除为 OCR 上传的文件；账户最多保存 100 个文件，请在 API 控制台删除它",
    ),
    (
        "deleting the file uploaded for OCR took more than {time}; delete it in the API console",
        "删除为 OCR 上传的文件超过了 {time}；请在 API 控制台删除它",
    ),
    (
        "cannot start the OCR API runtime: {e}",
        "无法启动 OCR API 运行时：{e}",
    ),
    ("the OCR API runtime is gone", "OCR API 运行时已不存在"),
    ("the API OCR engines are unavailable", "API OCR 引擎不可用"),
    (
        "the API reads {formats} files; this is none of them",
        "API 只读 {formats} 文件；这个文件都不是",
    ),
    (
        "the {what} is {size}; the API takes {what}s of at most {max}",
        "{what}大小为 {size}；API 接受的{what}最大为 {max}",
    ),
    (
        "the PDF has {count} pages; the API takes at most {max}",
        "PDF 有 {count} 页；API 最多接受 {max} 页",
    ),
    ("cannot run pdfimages: {e}", "无法运行 pdfimages：{e}"),
    (
        "scanned PDF pages need the pdftoppm program: apt-get install poppler-utils (macOS: brew install poppler)",
        "扫描的 PDF 页面需要 pdftoppm 程序：`apt-get install poppler-utils`（macOS：`brew install poppler`）",
    ),
    ("cannot run pdftoppm: {e}", "无法运行 pdftoppm：{e}"),
    (
        "pdftoppm could not rasterise page {page}: {why}",
        "pdftoppm 无法栅格化第 {page} 页：{why}",
    ),
    (
        "the {engine} OCR engine needs the model API client: set ZHI_API_KEY (this engine sends the image to the API)",
        "{engine} OCR 引擎需要模型 API 客户端：请设置 ZHI_API_KEY（该引擎会把图片发送到 API）",
    ),
    (
        "this document needs OCR and no engine is available: install tesseract (apt-get install tesseract-ocr tesseract-ocr-chi-sim; macOS: brew install tesseract tesseract-lang) or set ZHI_API_KEY to use glm-ocr",
        "此文档需要 OCR，但没有可用的引擎：请安装 tesseract（`apt-get install tesseract-ocr tesseract-ocr-chi-sim`；macOS：`brew install tesseract tesseract-lang`），或设置 ZHI_API_KEY 以使用 `glm-ocr`",
    ),
    (
        "tesseract is not installed: {tail}",
        "tesseract 未安装：{tail}",
    ),
    (
        "tesseract has neither Chinese (chi_sim) nor English (eng) language data: {tail}",
        "tesseract 既没有中文（chi_sim）也没有英文（eng）语言数据：{tail}",
    ),
    ("cannot run tesseract: {e}", "无法运行 tesseract：{e}"),
    (
        "tesseract timed out after {time}",
        "tesseract 在 {time} 后超时",
    ),
    (
        "tesseract printed more text than zhi takes from one page",
        "tesseract 输出的文字超过了 zhi 对一页所取的上限",
    ),
    (
        "tesseract failed ({exit}): {tail}",
        "tesseract 失败（{exit}）：{tail}",
    ),
    // ---- The model API.
    (
        "cannot set up the API client: {e}",
        "无法建立 API 客户端：{e}",
    ),
    ("invalid base URL {url}: {e}", "无效的基础 URL {url}：{e}"),
    (
        "invalid base URL {url}: only http and https are supported",
        "无效的基础 URL {url}：只支持 http 和 https",
    ),
    (
        "unexpected response shape: {e}",
        "响应的结构不符合预期：{e}",
    ),
    ("cannot encode request: {e}", "无法编码请求：{e}"),
    ("invalid base URL: {e}", "无效的基础 URL：{e}"),
    ("invalid base URL", "无效的基础 URL"),
    ("no completion", "没有补全结果"),
    ("no choices", "响应中没有 `choices`"),
    (
        "the response body is larger than {limit} bytes, far more than an answer of the requested length; it was not read",
        "响应体超过 {limit} 字节，远超所请求长度的回答；未读取",
    ),
    ("invalid request: {server}", "无效的请求：{server}"),
    ("request timed out: {server}", "请求超时：{server}"),
    ("connection failed: {server}", "连接失败：{server}"),
    ("request cancelled", "请求已取消"),
    ("HTTP {status}", "HTTP {status}"),
    (
        "HTTP {status} (code {code})",
        "HTTP {status}（代码 {code}）",
    ),
    ("HTTP {status}: {server}", "HTTP {status}：{server}"),
    (
        "HTTP {status} (code {code}): {server}",
        "HTTP {status}（代码 {code}）：{server}",
    ),
    ("finish_reason: {value}", "finish_reason：{value}"),
    ("the response is not a chat completion", "响应不是聊天补全"),
    (
        "invalid JSON body: {excerpt}",
        "无效的 JSON 响应体：{excerpt}",
    ),
    (
        "cancelled while waiting for rate-limit budget",
        "等待速率限额时被取消",
    ),
    (
        "a request of about {want} tokens is larger than the token budget of {burst} a minute (--tpm); it waits for a full minute's budget and is sent alone",
        "一个约 {want} 令牌的请求超过了每分钟 {burst} 令牌的预算（--tpm）；它将等满一分钟的预算后单独发送",
    ),
    ("in the batch", "在批次中"),
    ("in the batch (code {code})", "在批次中（代码 {code}）"),
    ("in the batch: {server}", "在批次中：{server}"),
    (
        "in the batch (code {code}): {server}",
        "在批次中（代码 {code}）：{server}",
    ),
    // ---- Runs, jobs and their outputs.
    (
        "cannot use output folder {path}: {e}",
        "无法使用输出文件夹 {path}：{e}",
    ),
    ("cannot create {path}: {e}", "无法创建 {path}：{e}"),
    ("cannot write {path}: {e}", "无法写入 {path}：{e}"),
    ("cannot start the runtime: {e}", "无法启动运行时：{e}"),
    ("planning failed: {e}", "规划失败：{e}"),
    (
        "lock file {path} {what}; zhi cannot tell whether another run holds it: remove it and run again",
        "锁文件 {path} {what}；zhi 无法判断是否有其他运行持有它：请删除它后再运行",
    ),
    (
        "output folder {path} is in use by another zhi run (pid {pid}, started {started}, run {run}); try again when it ends{hint}",
        "输出文件夹 {path} 正被另一个 zhi 运行使用（进程 {pid}，开始于 {started}，运行 {run}）；请在它结束后再试{hint}",
    ),
    (
        "output folder {path} is in use by another zhi run (pid {pid}, started {started}, run {run}); try again when it ends",
        "输出文件夹 {path} 正被另一个 zhi 运行使用（进程 {pid}，开始于 {started}，运行 {run}）；请在它结束后再试",
    ),
    (
        "output folder {path} is in use by another zhi run (pid {pid} on {host}, started {started}, run {run}); try again when it ends{hint}",
        "输出文件夹 {path} 正被另一个 zhi 运行使用（{host} 上的进程 {pid}，开始于 {started}，运行 {run}）；请在它结束后再试{hint}",
    ),
    (
        " (a lock of another machine is never taken over: remove it by hand if that run is gone)",
        "（另一台机器的锁从不会被接管：如果那次运行已经不在了，请手动删除它）",
    ),
    (
        "taking over a stale lock of pid {pid} (run {run})",
        "接管进程 {pid}（运行 {run}）留下的失效锁",
    ),
    ("could not take the lock {path}", "无法获取锁 {path}"),
    (
        "the Batch API refused to say how the batches are: {e}",
        "Batch API 拒绝告知批次的状态：{e}",
    ),
    ("asked the server what it is", "已询问服务器的类型"),
    (
        "submitting {n} request(s) to the Batch API…",
        "正在向 Batch API 提交 {n} 个请求…",
    ),
    ("the run stopped before submitting", "运行在提交之前已停止"),
    (
        "error: cannot write the manifest in {path}: {e}; the records written so far are in results.jsonl",
        "错误：无法在 {path} 中写入清单：{e}；目前已写入的记录在 results.jsonl 中",
    ),
    (
        "error: cannot append to results.jsonl: {e}",
        "错误：无法追加到 results.jsonl：{e}",
    ),
    (
        "the output folder cannot be written ({e})",
        "输出文件夹无法写入（{e}）",
    ),
    (
        "rate limits outlasted every retry ({e})",
        "所有重试都用完了，仍受速率限制（{e}）",
    ),
    (
        "failed: {input} ({kind}): {e}",
        "失败：{input}（{kind}）：{e}",
    ),
    (
        "{signal} received: no new jobs; waiting up to {secs}s for jobs in flight (signal again to cancel them now)",
        "收到 {signal}：不再开始新任务；最多等待 {secs} 秒让进行中的任务完成（再发一次信号可立即取消它们）",
    ),
    ("token budget of {n} reached", "已达到 {n} 令牌的预算"),
    (
        "{n} job(s) failed; --max-failures reached",
        "{n} 个任务失败；已达到 --max-failures",
    ),
    ("run aborted ({kind}): {e}", "运行已中止（{kind}）：{e}"),
    ("run aborted: {e}", "运行已中止：{e}"),
    ("interrupted by {signal}", "被 {signal} 中断"),
    ("not run: {e}", "未运行：{e}"),
    ("not scheduled", "未被安排运行"),
    ("stopped after {n} failed job(s)", "{n} 个任务失败后停止"),
    ("cannot clean {path}: {e}", "无法清理 {path}：{e}"),
    ("cleaned stale {path}", "已清理过期的 {path}"),
    (
        "concurrency {old} -> {new} (rate limited)",
        "并发 {old} -> {new}（受速率限制）",
    ),
    (
        "concurrency {old} -> {new} (successes)",
        "并发 {old} -> {new}（连续成功）",
    ),
    ("document split into pieces", "文档已拆分"),
    ("piece done", "一段已完成"),
    ("piece failed: {e}", "一段失败：{e}"),
    (
        "piece {i} of {n} not run: another piece failed",
        "第 {i}/{n} 段未运行：另一段失败了",
    ),
    (
        "cannot checkpoint {path}: {e}",
        "无法保存 {path} 的检查点：{e}",
    ),
    ("cannot join the pieces: {e}", "无法合并各段：{e}"),
    (
        "internal error while processing {input}: {reason}",
        "处理 {input} 时发生内部错误：{reason}",
    ),
    (
        "skill `{skill}` runs the agent loop (tools between turns), which the Batch API cannot carry; add --agent-jobs run to run such jobs now at the standard price, or run them without --submit batch",
        "技能 `{skill}` 运行智能体循环（轮次之间调用工具），Batch API 无法承载；加上 `--agent-jobs run` 可按标准价格立即运行这类任务，或不带 `--submit batch` 运行它们",
    ),
    ("commit crashed: {e}", "提交结果时崩溃：{e}"),
    ("job ended", "任务结束"),
    (
        "it changed while it was being read",
        "它在读取过程中被修改了",
    ),
    (
        "{input} has no text to process (an empty file, or a scan with no OCR text)",
        "{input} 没有可处理的文字（空文件，或没有 OCR 文字的扫描件）",
    ),
    (
        "{input} is about {estimate} tokens; one request to {model} takes about {budget} tokens of document{limited}, and skill `{skill}` does not split documents (chunking: none)",
        "{input} 约有 {estimate} 个令牌；发给 {model} 的一次请求约能容纳 {budget} 个文档令牌{limited}，而技能 `{skill}` 不拆分文档（`chunking: none`）",
    ),
    (
        "{input} is about {estimate} tokens; one request to {model} takes about {budget} tokens of document, and skill `{skill}` does not split documents (chunking: none)",
        "{input} 约有 {estimate} 个令牌；发给 {model} 的一次请求约能容纳 {budget} 个文档令牌，而技能 `{skill}` 不拆分文档（`chunking: none`）",
    ),
    (
        " within {tpm_label} a minute",
        "（受每分钟 {tpm_label} 的限制）",
    ),
    (
        "context too long for the model; splitting the document",
        "上下文超出模型的限制；正在拆分文档",
    ),
    (
        "it is not the file that was planned, or it was modified",
        "它不是计划时的那个文件，或已被修改",
    ),
    ("it can no longer be read", "它已无法读取"),
    (
        "{input} changed after the run was planned: {why}; it was not sent (run again to process it as it is now)",
        "{input} 在计划之后发生了变化：{why}；未发送（请再运行一次，按它现在的样子处理）",
    ),
    ("extraction crashed: {e}", "提取时崩溃：{e}"),
    (
        "the model gave an empty answer and wrote no file",
        "模型给出了空回答，也没有写入文件",
    ),
    ("cannot write response.md: {e}", "无法写入 response.md：{e}"),
    (
        "{path} was changed since zhi wrote it (or was not written by zhi); it is left as it is — move it away or delete it to redo this job",
        "{path} 在 zhi 写入之后被修改过（或并非 zhi 所写）；保持原样未动——把它移走或删除后即可重做此任务",
    ),
    (
        "cannot keep the failed staging of {input}: {e}",
        "无法保留 {input} 失败时的暂存内容：{e}",
    ),
    ("cancelled", "已取消"),
    (
        "the answer was cut at the length limit ({n} tokens)",
        "回答在长度上限处被截断（{n} 个令牌）",
    ),
    (
        "the model's answer was cut at the length limit ({n} tokens)",
        "模型的回答在长度上限处被截断（{n} 个令牌）",
    ),
    ("final answer ({n} chars)", "最终回答（{n} 个字符）"),
    ("tool call: {call}", "工具调用：{call}"),
    (
        "skill `{skill}` reached max_turns {n} without a final answer",
        "技能 `{skill}` 达到 max_turns {n} 仍没有最终回答",
    ),
    ("{file} was not written", "{file} 没有写出"),
    ("{file} is empty", "{file} 是空的"),
    (
        "{file} is a copy of the input, not the result asked for (if the document is already what was asked, e.g. in the target language, there is nothing to do)",
        "{file} 是输入的副本，不是所要的结果（如果文档本来就符合要求，例如已是目标语言，就无需处理）",
    ),
    (
        "{file} was not written: the model only said it had written it",
        "{file} 没有写出：模型只是说它已经写了",
    ),
    ("{file} is not valid: {why}", "{file} 无效：{why}"),
    (
        "{file} repeats the same passages over and over (the model looped), not a usable result",
        "{file} 一再重复相同的段落（模型陷入了循环），不是可用的结果",
    ),
    (
        "{file} repeats the model's instructions instead of giving the result",
        "{file} 复述了给模型的指令，而没有给出结果",
    ),
    (
        "{file} is not written in {value}",
        "{file} 不是用 {value} 写的",
    ),
    (
        "{file} is far shorter than the input it should render in full (parts were left out)",
        "{file} 比应完整呈现的输入短得多（有部分被遗漏）",
    ),
    ("could not write `{path}`: {e}", "无法写入 `{path}`：{e}"),
    (
        "the output folder `{path}` must be an absolute path",
        "输出文件夹 `{path}` 必须是绝对路径",
    ),
    (
        "the output folder `{path}` cannot be used: {e}",
        "输出文件夹 `{path}` 无法使用：{e}",
    ),
    (
        "the output folder `{path}` is not a folder",
        "输出文件夹 `{path}` 不是文件夹",
    ),
    (
        "cannot write the transcript {path}: {e}",
        "无法写入对话记录 {path}：{e}",
    ),
    ("cannot write the transcript: {e}", "无法写入对话记录：{e}"),
    ("cannot be read: {e}", "无法读取：{e}"),
    ("larger than {n} MB", "大于 {n} MB"),
    ("not a text file", "不是文本文件"),
    ("no OCR engine configured", "没有配置 OCR 引擎"),
    // ---- Batches.
    (
        "cannot write the batch record of {id}: {e}",
        "无法写入批次 {id} 的记录：{e}",
    ),
    (
        "cannot keep the answers of batch {id}: {e}",
        "无法保存批次 {id} 的回答：{e}",
    ),
    (
        "the batch ended ({status}) without answering this request",
        "批次已结束（{status}），但没有回答这个请求",
    ),
    (
        "cannot read the batch answer: {e}",
        "无法读取批次的回答：{e}",
    ),
    (
        "the batch answer is not a JSON line",
        "批次的回答不是一行 JSON",
    ),
    (
        "cannot write {what} of batch {id}: {e}",
        "无法写入批次 {id} 的{what}：{e}",
    ),
    ("batch submitted", "批次已提交"),
    (
        "batch {id} belongs to {url}; run with --base-url {url} to collect it",
        "批次 {id} 属于 {url}；请用 --base-url {url} 运行以收取它",
    ),
    (
        "batch {id} could not be brought up to date (the next run tries again): {e}",
        "批次 {id} 无法更新（下一次运行会再试）：{e}",
    ),
    (
        "cannot read the collected batch answers: {e}",
        "无法读取已收取的批次回答：{e}",
    ),
    (
        "cannot look for the file {name} that an interrupted run may have uploaded ({e}); delete it in the provider's console if it is there",
        "无法查找被中断的运行可能已上传的文件 {name}（{e}）；如果它在那里，请在服务商的控制台删除它",
    ),
    (
        "batch {id} failed at the provider: {server}",
        "批次 {id} 在服务商处失败：{server}",
    ),
    (
        "the queued requests could not all be submitted (the next run queues them again): {e}",
        "排队的请求未能全部提交（下一次运行会重新排队）：{e}",
    ),
    (
        "cannot ask the provider about batch {id}: {e}",
        "无法向服务商查询批次 {id}：{e}",
    ),
    ("{path} has no batches", "{path} 没有批次"),
    (
        "{path} has no batches (`zhi run … --submit batch` submits them)",
        "{path} 没有批次（用 `zhi run … --submit batch` 提交）",
    ),
    (
        "no running batch `{id}` in {path} (`zhi batch status` lists them)",
        "{path} 中没有正在运行的批次 `{id}`（`zhi batch status` 可列出它们）",
    ),
    ("no running batch in {path}", "{path} 中没有正在运行的批次"),
    (
        "batch {id} belongs to {url}; give --base-url {url} to cancel it",
        "批次 {id} 属于 {url}；请用 --base-url {url} 来取消它",
    ),
    (
        "cannot write the record of batch {id}: {e}",
        "无法写入批次 {id} 的记录：{e}",
    ),
    (
        "{n} batch(es) running; `zhi run` with the same arguments collects them once they end (within 24 h)",
        "{n} 个批次正在运行；它们结束后（24 小时内）用相同参数运行 `zhi run` 即可收取",
    ),
    (
        "batches submitted to another API base are shown as last seen; give --base-url to ask about them",
        "提交到其他 API 地址的批次按上次看到的状态显示；用 --base-url 可查询它们",
    ),
    (
        "no API key: statuses are as the last run saw them (set {var} to ask the provider)",
        "没有 API 密钥：状态是上次运行看到的（设置 {var} 可向服务商查询）",
    ),
    (
        "batch {id}: {status} ({n} request(s)); the next `zhi run` collects what it answered and does the rest again",
        "批次 {id}：{status}（{n} 个请求）；下一次 `zhi run` 会收取已回答的部分，其余的重新执行",
    ),
    ("cannot cancel batch {id}: {e}", "无法取消批次 {id}：{e}"),
    // ---- Manifests.
    (
        "{path} is neither a run folder (results.jsonl, manifest.json) nor an output folder with runs in .zhi/runs/",
        "{path} 既不是运行文件夹（results.jsonl、manifest.json），也不是在 .zhi/runs/ 下有运行记录的输出文件夹",
    ),
    (
        "{path} has no runs in .zhi/runs/",
        "{path} 在 .zhi/runs/ 下没有运行记录",
    ),
    (
        "{path} has no runs yet (they are kept in .zhi/runs/)",
        "{path} 还没有运行记录（它们保存在 .zhi/runs/ 下）",
    ),
    (
        "no run `{run}` in {path} (give a run id from .zhi/runs/, or the path of a run folder)",
        "{path} 中没有运行 `{run}`（请给出 .zhi/runs/ 下的运行编号，或运行文件夹的路径）",
    ),
    (
        "`{run}` matches {n} runs in {path}: {list}",
        "`{run}` 匹配 {path} 中的 {n} 次运行：{list}",
    ),
    (
        "-o {path} is one of the runs being merged; write the merge to another folder",
        "-o {path} 是要合并的运行之一；请把合并结果写到别的文件夹",
    ),
    (
        "run {run} has no manifest.json (it was killed); its records are merged, its plan is taken from them",
        "运行 {run} 没有 manifest.json（它被终止了）；它的记录已合并，计划取自这些记录",
    ),
    (
        "run {run}: {n} torn line(s) in results.jsonl ignored",
        "运行 {run}：已忽略 results.jsonl 中 {n} 行残缺的记录",
    ),
    ("(no run has a record of it)", "（没有运行记录过它）"),
];
