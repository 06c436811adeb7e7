<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>AgentController</name>
    <message>
        <source>Session restarted in a new process (pid {0})</source>
        <translation>会话已在新进程中重启（pid {0}）</translation>
    </message>
    <message>
        <source>The stream broke; {0}</source>
        <translation>数据流中断；{0}</translation>
    </message>
    <message>
        <source>Conversation compacted ({0} tokens before)</source>
        <translation>对话已压缩（压缩前 {0} 个 token）</translation>
    </message>
    <message>
        <source>Desktop Agent is waiting for approval</source>
        <translation>Desktop Agent 正在等待您的批准</translation>
    </message>
    <message>
        <source>Allow {0}: {1}?</source>
        <translation>允许 {0}：{1}？</translation>
    </message>
</context>
<context>
    <name>AllowHost</name>
    <message>
        <source>Allow this host for the session?</source>
        <translation>允许此会话访问该主机？</translation>
    </message>
    <message>
        <source>Sandboxed commands of this session may then connect to {0} (every port), through the proxy that logs each request, from the next command on. deniedDomains still apply. The settings are not changed.</source>
        <translation>此后（从下一条命令起），此会话的沙箱命令可以通过记录每个请求的代理连接到 {0}（任意端口）。deniedDomains 仍然有效。设置不会被更改。</translation>
    </message>
    <message>
        <source>Cancel  Esc</source>
        <translation>取消  Esc</translation>
    </message>
    <message>
        <source>Allow</source>
        <translation>允许</translation>
    </message>
</context>
<context>
    <name>ChangeActions</name>
    <message>
        <source>{0} changed since this change (by you or a later change);</source>
        <translation>{0} 在此更改之后又被修改过（由你或之后的更改）；</translation>
    </message>
    <message>
        <source>nothing was reverted. Revert the later changes first.</source>
        <translation>未撤销任何内容。请先撤销之后的更改。</translation>
    </message>
    <message>
        <source>A {0} change cannot be reverted from here.</source>
        <translation>无法在此撤销 {0} 的更改。</translation>
    </message>
    <message>
        <source>This change has no recorded result to revert.</source>
        <translation>此更改没有可供撤销的记录结果。</translation>
    </message>
    <message>
        <source>This change has no file path.</source>
        <translation>此更改没有文件路径。</translation>
    </message>
    <message>
        <source>The transcript does not hold what this change wrote.</source>
        <translation>会话记录中没有此更改写入的内容。</translation>
    </message>
    <message>
        <source>The transcript does not hold the file as it was before this change.</source>
        <translation>会话记录中没有此更改之前的文件内容。</translation>
    </message>
    <message>
        <source>{0} no longer exists; nothing was re-applied.</source>
        <translation>{0} 已不存在；未重新应用任何内容。</translation>
    </message>
    <message>
        <source>{0} no longer exists; nothing was reverted.</source>
        <translation>{0} 已不存在；未撤销任何内容。</translation>
    </message>
    <message>
        <source>{0} is a directory now; nothing was re-applied.</source>
        <translation>{0} 现在是一个目录；未重新应用任何内容。</translation>
    </message>
    <message>
        <source>{0} is a directory now; nothing was reverted.</source>
        <translation>{0} 现在是一个目录；未撤销任何内容。</translation>
    </message>
    <message>
        <source>The transcript&apos;s record of the revert is incomplete; nothing was re-applied.</source>
        <translation>会话记录中的撤销记录不完整；未重新应用任何内容。</translation>
    </message>
    <message>
        <source>{0} exists again since the revert (by you or a later change); nothing was re-applied.</source>
        <translation>{0} 在撤销之后又被创建（由你或之后的更改）；未重新应用任何内容。</translation>
    </message>
    <message>
        <source>{0} changed since the revert (by you or a later change); nothing was re-applied.</source>
        <translation>{0} 在撤销之后又被修改过（由你或之后的更改）；未重新应用任何内容。</translation>
    </message>
    <message>
        <source>What this change wrote to {0} cannot be rebuilt from the transcript; nothing was re-applied.</source>
        <translation>无法从会话记录重建此更改写入 {0} 的内容；未重新应用任何内容。</translation>
    </message>
    <message>
        <source>{0} is behind a link or is no longer a plain file; nothing was written.</source>
        <translation>{0} 位于链接之后或已不是普通文件；未写入任何内容。</translation>
    </message>
</context>
<context>
    <name>ChangeDetail</name>
    <message>
        <source>← All changes</source>
        <translation>← 全部更改</translation>
    </message>
    <message>
        <source>Back to the list of changes (Esc)</source>
        <translation>返回更改列表 (Esc)</translation>
    </message>
    <message>
        <source>Previous hunk  ([ or Alt+↑)</source>
        <translation>上一个差异块  ([ 或 Alt+↑)</translation>
    </message>
    <message>
        <source>Next hunk  (] or Alt+↓)</source>
        <translation>下一个差异块  (] 或 Alt+↓)</translation>
    </message>
    <message>
        <source>Open in editor</source>
        <translation>在编辑器中打开</translation>
    </message>
    <message>
        <source>Copy patch</source>
        <translation>复制补丁</translation>
    </message>
    <message>
        <source>Revert…</source>
        <translation>撤销…</translation>
    </message>
    <message>
        <source>Redo…</source>
        <translation>重做…</translation>
    </message>
    <message>
        <source>The whole change</source>
        <translation>完整更改</translation>
    </message>
    <message>
        <source>no textual change</source>
        <translation>无文本更改</translation>
    </message>
    <message>
        <source>rejected: not written</source>
        <translation>已拒绝：未写入</translation>
    </message>
    <message>
        <source>hunk {0} of {1}</source>
        <translation>第 {0} 个差异块，共 {1} 个</translation>
    </message>
</context>
<context>
    <name>CheckpointMarker</name>
    <message>
        <source>checkpoint · no changes</source>
        <translation>检查点 · 无更改</translation>
    </message>
    <message>
        <source>1 file</source>
        <translation>1 个文件</translation>
    </message>
    <message>
        <source>{0} files</source>
        <translation>{0} 个文件</translation>
    </message>
    <message>
        <source>checkpoint</source>
        <translation>检查点</translation>
    </message>
    <message>
        <source>Rewind…</source>
        <translation>回退…</translation>
    </message>
    <message>
        <source>Rewind to before this message</source>
        <translation>回退到这条消息之前</translation>
    </message>
</context>
<context>
    <name>CodeView</name>
    <message>
        <source>Code block</source>
        <translation>代码块</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>Copy this code block</source>
        <translation>复制此代码块</translation>
    </message>
    <message>
        <source>Copy code</source>
        <translation>复制代码</translation>
    </message>
    <message>
        <source>Copied</source>
        <translation>已复制</translation>
    </message>
</context>
<context>
    <name>ConversationView</name>
    <message>
        <source>error</source>
        <translation>错误</translation>
    </message>
    <message numerus="yes">
        <source>%n line(s)</source>
        <translation>
            <numerusform>%n 行</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n file(s)</source>
        <translation>
            <numerusform>%n 个文件</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n match(es)</source>
        <translation>
            <numerusform>%n 处匹配</numerusform>
        </translation>
    </message>
    <message>
        <source>no matches</source>
        <translation>无匹配</translation>
    </message>
    <message numerus="yes">
        <source>%n result(s)</source>
        <translation>
            <numerusform>%n 个结果</numerusform>
        </translation>
    </message>
    <message>
        <source>no output</source>
        <translation>无输出</translation>
    </message>
    <message>
        <source>done</source>
        <translation>完成</translation>
    </message>
    <message>
        <source>Conversation</source>
        <translation>对话</translation>
    </message>
    <message>
        <source>denied</source>
        <translation>已拒绝</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>stopping</source>
        <translation>正在停止</translation>
    </message>
    <message>
        <source>interrupted</source>
        <translation>已中断</translation>
    </message>
    <message>
        <source>Interrupted by you. The transcript is intact; send a new message to continue.</source>
        <translation>已由您中断。对话记录完好无损；发送新消息即可继续。</translation>
    </message>
    <message>
        <source>Stopped after the maximum number of turns.</source>
        <translation>已达到最大轮数，已停止。</translation>
    </message>
    <message>
        <source>A hook stopped this turn.</source>
        <translation>一个钩子停止了本轮。</translation>
    </message>
    <message>
        <source>{0} earlier items are not shown.</source>
        <translation>还有 {0} 条更早的内容未显示。</translation>
    </message>
    <message>
        <source>Show more</source>
        <translation>显示更多</translation>
    </message>
    <message>
        <source>Interrupted by you.</source>
        <translation>已由您中断。</translation>
    </message>
    <message>
        <source>no result</source>
        <translation>无结果</translation>
    </message>
</context>
<context>
    <name>DiffPanel</name>
    <message>
        <source>Changes</source>
        <translation>更改</translation>
    </message>
    <message>
        <source>Diffs of the session</source>
        <translation>本次会话的差异</translation>
    </message>
    <message>
        <source>No application could open {0}.</source>
        <translation>没有应用程序能打开 {0}。</translation>
    </message>
    <message>
        <source>Patch copied ({0} lines).</source>
        <translation>补丁已复制（{0} 行）。</translation>
    </message>
    <message>
        <source>Reverting…</source>
        <translation>正在撤销…</translation>
    </message>
    <message>
        <source>Re-applying…</source>
        <translation>正在重新应用…</translation>
    </message>
    <message>
        <source>Not reverted: {0}</source>
        <translation>未撤销：{0}</translation>
    </message>
    <message>
        <source>Not re-applied: {0}</source>
        <translation>未重新应用：{0}</translation>
    </message>
    <message>
        <source>Could not revert: {0}</source>
        <translation>无法撤销：{0}</translation>
    </message>
    <message>
        <source>Could not re-apply: {0}</source>
        <translation>无法重新应用：{0}</translation>
    </message>
    <message>
        <source>Deleted the file this change created.</source>
        <translation>已删除此更改创建的文件。</translation>
    </message>
    <message>
        <source>Reverted: the file is as it was before this change.</source>
        <translation>已撤销：文件已恢复为此更改之前的状态。</translation>
    </message>
    <message>
        <source>Reverted this change; your later edits in the file were kept.</source>
        <translation>已撤销此更改；你之后在该文件中的编辑已保留。</translation>
    </message>
    <message>
        <source>Re-applied: the file holds this change again.</source>
        <translation>已重新应用：文件再次包含此更改。</translation>
    </message>
    <message>
        <source>Re-applied this change; your later edits in the file were kept.</source>
        <translation>已重新应用此更改；你之后在该文件中的编辑已保留。</translation>
    </message>
    <message>
        <source>The agent is told with your next message.</source>
        <translation>你的下一条消息会告知智能体。</translation>
    </message>
    <message>
        <source>(It could not be recorded in the transcript.)</source>
        <translation>（未能记录到会话记录中。）</translation>
    </message>
    <message>
        <source>Changes ({0})</source>
        <translation>更改（{0}）</translation>
    </message>
    <message>
        <source>No changes yet.</source>
        <translation>暂无更改。</translation>
    </message>
    <message>
        <source>Every edit the agent proposes shows up here as a diff,</source>
        <translation>代理提出的每一处修改都会以差异的形式显示在这里，</translation>
    </message>
    <message>
        <source>before anything is written to disk.</source>
        <translation>在写入磁盘之前。</translation>
    </message>
    <message>
        <source>TURN {0}</source>
        <translation>第 {0} 轮</translation>
    </message>
    <message>
        <source>pending</source>
        <translation>待处理</translation>
    </message>
    <message>
        <source>applied</source>
        <translation>已应用</translation>
    </message>
    <message>
        <source>rejected</source>
        <translation>已拒绝</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>reverted</source>
        <translation>已撤销</translation>
    </message>
    <message>
        <source>edited by you</source>
        <translation>已由您修改</translation>
    </message>
    <message>
        <source>{0} of {1} hunks rejected</source>
        <translation>已拒绝 {0}/{1} 个差异块</translation>
    </message>
    <message>
        <source>new</source>
        <translation>新建</translation>
    </message>
    <message>
        <source>Show all {0} lines</source>
        <translation>显示全部 {0} 行</translation>
    </message>
    <message>
        <source>Open in editor</source>
        <translation>在编辑器中打开</translation>
    </message>
    <message>
        <source>Copy patch</source>
        <translation>复制补丁</translation>
    </message>
    <message>
        <source>Revert…</source>
        <translation>撤销…</translation>
    </message>
    <message>
        <source>Redo…</source>
        <translation>重做…</translation>
    </message>
    <message>
        <source>(no textual change)</source>
        <translation>（无文本更改）</translation>
    </message>
    <message>
        <source>{0} of {1} hunks rejected ({2}): not written</source>
        <translation>已拒绝 {0}/{1} 个差异块（{2}）：未写入</translation>
    </message>
    <message>
        <source>Rendering the diff ({0} lines)…</source>
        <translation>正在渲染差异（{0} 行）…</translation>
    </message>
    <message>
        <source>hunk {0} of {1}</source>
        <translation>第 {0} 个差异块，共 {1} 个</translation>
    </message>
    <message>
        <source>accepted</source>
        <translation>已接受</translation>
    </message>
    <message>
        <source>rejected: not written</source>
        <translation>已拒绝：未写入</translation>
    </message>
</context>
<context>
    <name>Highlight</name>
    <message>
        <source>… {0} more lines of this change are not shown ({1} shown)</source>
        <translation>… 此更改还有 {0} 行未显示（已显示 {1} 行）</translation>
    </message>
</context>
<context>
    <name>HunkDiffView</name>
    <message>
        <source>(no textual change)</source>
        <translation>（无文本更改）</translation>
    </message>
    <message>
        <source>(rejected: not written)</source>
        <translation>（已拒绝：未写入）</translation>
    </message>
    <message>
        <source>hunk {0} of {1}</source>
        <translation>第 {0} 个差异块，共 {1} 个</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>&amp;Network…</source>
        <translation>网络(&amp;N)…</translation>
    </message>
    <message>
        <source>Main toolbar</source>
        <translation>主工具栏</translation>
    </message>
    <message>
        <source>Mode</source>
        <translation>模式</translation>
    </message>
    <message>
        <source>Permission mode</source>
        <translation>权限模式</translation>
    </message>
    <message>
        <source>Permission mode (Ctrl+Shift+M cycles)</source>
        <translation>权限模式（Ctrl+Shift+M 切换）</translation>
    </message>
    <message>
        <source>M&amp;odel</source>
        <translation>模型(&amp;O)</translation>
    </message>
    <message>
        <source>The server did not list its models ({0}); type a model name</source>
        <translation>服务器未列出其模型（{0}）；请输入模型名称</translation>
    </message>
    <message>
        <source>{0} models from the server; or type any model name</source>
        <translation>服务器提供 {0} 个模型；也可输入任意模型名称</translation>
    </message>
    <message>
        <source>model name</source>
        <translation>模型名称</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>The model of this session&apos;s next requests (the default is in Settings)</source>
        <translation>本会话后续请求使用的模型（默认模型在设置中）</translation>
    </message>
    <message>
        <source>Tour · scripted model, sample project</source>
        <translation>导览 · 脚本模型，示例项目</translation>
    </message>
    <message>
        <source>Stop  Esc</source>
        <translation>停止  Esc</translation>
    </message>
    <message>
        <source>Stop the agent</source>
        <translation>停止代理</translation>
    </message>
    <message>
        <source>Filter sessions</source>
        <translation>筛选会话</translation>
    </message>
    <message>
        <source>Show archived</source>
        <translation>显示已归档</translation>
    </message>
    <message>
        <source>Inbox</source>
        <translation>收件箱</translation>
    </message>
    <message>
        <source>Questions waiting for you</source>
        <translation>等待你回答的问题</translation>
    </message>
    <message>
        <source>Running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>Open sessions</source>
        <translation>已打开的会话</translation>
    </message>
    <message>
        <source>Sessions in this folder</source>
        <translation>此文件夹中的会话</translation>
    </message>
    <message>
        <source>Inbox ({0})</source>
        <translation>收件箱（{0}）</translation>
    </message>
    <message>
        <source>Rename…</source>
        <translation>重命名…</translation>
    </message>
    <message>
        <source>Close Session</source>
        <translation>关闭会话</translation>
    </message>
    <message>
        <source>Review Changes…</source>
        <translation>审阅更改…</translation>
    </message>
    <message>
        <source>Archive Worktree</source>
        <translation>归档工作树</translation>
    </message>
    <message>
        <source>Unarchive</source>
        <translation>取消归档</translation>
    </message>
    <message>
        <source>Archive</source>
        <translation>归档</translation>
    </message>
    <message>
        <source>Delete…</source>
        <translation>删除…</translation>
    </message>
    <message>
        <source>archived</source>
        <translation>已归档</translation>
    </message>
    <message>
        <source>Sessions</source>
        <translation>会话</translation>
    </message>
    <message>
        <source>Find in conversation</source>
        <translation>在对话中查找</translation>
    </message>
    <message>
        <source>Matches</source>
        <translation>匹配项</translation>
    </message>
    <message>
        <source>Previous match (Shift+Enter)</source>
        <translation>上一个匹配 (Shift+Enter)</translation>
    </message>
    <message>
        <source>Next match (Enter)</source>
        <translation>下一个匹配 (Enter)</translation>
    </message>
    <message>
        <source>Close (Esc)</source>
        <translation>关闭 (Esc)</translation>
    </message>
    <message>
        <source>Ask for a change…   (Enter to send, Shift+Enter for a new line)</source>
        <translation>描述您想要的修改…   （Enter 发送，Shift+Enter 换行）</translation>
    </message>
    <message>
        <source>Agent status</source>
        <translation>代理状态</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;Open Folder…</source>
        <translation>打开文件夹(&amp;O)…</translation>
    </message>
    <message>
        <source>Open &amp;Recent</source>
        <translation>最近打开(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;New Session</source>
        <translation>新建会话(&amp;N)</translation>
    </message>
    <message>
        <source>New &amp;Window</source>
        <translation>新建窗口(&amp;W)</translation>
    </message>
    <message>
        <source>Restore &amp;Worktree…</source>
        <translation>恢复工作树(&amp;W)…</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;Edit</source>
        <translation>编辑(&amp;E)</translation>
    </message>
    <message>
        <source>&amp;Find in Conversation…</source>
        <translation>在对话中查找(&amp;F)…</translation>
    </message>
    <message>
        <source>Focus &amp;Prompt</source>
        <translation>聚焦输入框(&amp;P)</translation>
    </message>
    <message>
        <source>&amp;Settings…</source>
        <translation>设置(&amp;S)…</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Sessions Pane</source>
        <translation>会话面板(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;Changes Pane</source>
        <translation>更改面板(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Session</source>
        <translation>会话(&amp;S)</translation>
    </message>
    <message>
        <source>Se&amp;nd</source>
        <translation>发送(&amp;N)</translation>
    </message>
    <message>
        <source>&amp;Stop</source>
        <translation>停止(&amp;S)</translation>
    </message>
    <message>
        <source>Next &amp;Waiting Question</source>
        <translation>下一个等待的问题(&amp;W)</translation>
    </message>
    <message>
        <source>&amp;Cycle Permission Mode</source>
        <translation>切换权限模式(&amp;C)</translation>
    </message>
    <message>
        <source>Permission &amp;Mode</source>
        <translation>权限模式(&amp;M)</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>Take the Offline &amp;Tour</source>
        <translation>离线导览(&amp;T)</translation>
    </message>
    <message>
        <source>&amp;Keyboard Shortcuts</source>
        <translation>键盘快捷键(&amp;K)</translation>
    </message>
    <message>
        <source>&amp;About Desktop Agent</source>
        <translation>关于 Desktop Agent(&amp;A)</translation>
    </message>
    <message>
        <source>another window</source>
        <translation>另一个窗口</translation>
    </message>
    <message>
        <source>worktree {0}</source>
        <translation>工作树 {0}</translation>
    </message>
    <message>
        <source>Rename Session</source>
        <translation>重命名会话</translation>
    </message>
    <message>
        <source>Name:</source>
        <translation>名称：</translation>
    </message>
    <message>
        <source>Session deleted (its transcript is in {0}).</source>
        <translation>会话已删除（其记录位于 {0}）。</translation>
    </message>
    <message>
        <source>Could not change the session: {0}</source>
        <translation>无法更改会话：{0}</translation>
    </message>
    <message>
        <source>Delete this session?</source>
        <translation>删除此会话？</translation>
    </message>
    <message>
        <source>Its transcript moves to the trash folder of Desktop Agent&apos;s data directory; the files it changed stay as they are.</source>
        <translation>其记录将移到 Desktop Agent 数据目录的回收站文件夹；它更改过的文件保持不变。</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>The worktree was not archived: {0}</source>
        <translation>工作树未归档：{0}</translation>
    </message>
    <message>
        <source>Worktree {0} archived: its branch and a snapshot are kept (File ▸ Restore Worktree…).</source>
        <translation>工作树 {0} 已归档：其分支和快照已保留（文件 ▸ 恢复工作树…）。</translation>
    </message>
    <message>
        <source>This repository has no archived worktree.</source>
        <translation>此仓库没有已归档的工作树。</translation>
    </message>
    <message>
        <source>Restore Worktree</source>
        <translation>恢复工作树</translation>
    </message>
    <message>
        <source>Worktree:</source>
        <translation>工作树：</translation>
    </message>
    <message>
        <source>The worktree was not restored: {0}</source>
        <translation>工作树未恢复：{0}</translation>
    </message>
    <message>
        <source>(no recent folders)</source>
        <translation>（没有最近的文件夹）</translation>
    </message>
    <message>
        <source>running {0}</source>
        <translation>正在运行 {0}</translation>
    </message>
    <message>
        <source>running a tool</source>
        <translation>正在运行一个工具</translation>
    </message>
    <message>
        <source>writing its reply</source>
        <translation>正在撰写回复</translation>
    </message>
    <message>
        <source>waiting for your approval of {0}</source>
        <translation>正在等待你批准 {0}</translation>
    </message>
    <message>
        <source>waiting for your approval</source>
        <translation>正在等待你的批准</translation>
    </message>
    <message>
        <source>waiting to retry a request</source>
        <translation>正在等待重试请求</translation>
    </message>
    <message>
        <source>stopping</source>
        <translation>正在停止</translation>
    </message>
    <message>
        <source>thinking</source>
        <translation>正在思考</translation>
    </message>
    <message>
        <source>The phone page needs the sessions to run in this window.</source>
        <translation>手机页面需要会话在此窗口中运行。</translation>
    </message>
    <message>
        <source>The phone page could not start: {0}</source>
        <translation>手机页面无法启动：{0}</translation>
    </message>
    <message>
        <source>Open Folder</source>
        <translation>打开文件夹</translation>
    </message>
    <message>
        <source>Opening {0}…</source>
        <translation>正在打开 {0}…</translation>
    </message>
    <message>
        <source>the session closes</source>
        <translation>会话将关闭</translation>
    </message>
    <message>
        <source>the other session opens</source>
        <translation>打开另一个会话</translation>
    </message>
    <message>
        <source>{0} opens</source>
        <translation>打开 {0}</translation>
    </message>
    <message>
        <source>a new session starts</source>
        <translation>开始一个新会话</translation>
    </message>
    <message>
        <source>{0} of {1}</source>
        <translation>{0}/{1}</translation>
    </message>
    <message>
        <source>No matches</source>
        <translation>无匹配</translation>
    </message>
    <message>
        <source>Open settings</source>
        <translation>打开设置</translation>
    </message>
    <message>
        <source>Take the offline tour</source>
        <translation>体验离线导览</translation>
    </message>
    <message>
        <source>Could not open the session: {0}</source>
        <translation>无法打开会话：{0}</translation>
    </message>
    <message>
        <source>Trust this folder?</source>
        <translation>信任此文件夹？</translation>
    </message>
    <message>
        <source>&lt;b&gt;Do you trust the files in {0}?&lt;/b&gt;</source>
        <translation>&lt;b&gt;您信任 {0} 中的文件吗？&lt;/b&gt;</translation>
    </message>
    <message>
        <source>What would run</source>
        <translation>将会运行的内容</translation>
    </message>
    <message>
        <source>Trusting the folder lets these run and apply. Without trust none of them does; the folder&apos;s deny and ask rules apply either way.</source>
        <translation>信任此文件夹后，这些内容才会运行和生效。不信任时它们都不会运行；文件夹的拒绝和询问规则始终生效。</translation>
    </message>
    <message>
        <source>Its settings grant permissions, run hooks or start MCP servers.</source>
        <translation>它的设置会授予权限、运行钩子或启动 MCP 服务器。</translation>
    </message>
    <message>
        <source>Its {0} would run these commands and grant these permissions:</source>
        <translation>它的 {0} 将运行以下命令并授予以下权限：</translation>
    </message>
    <message>
        <source> and </source>
        <translation> 和 </translation>
    </message>
    <message>
        <source>Hooks</source>
        <translation>钩子</translation>
    </message>
    <message>
        <source>MCP servers (start with the first message)</source>
        <translation>MCP 服务器（随第一条消息启动）</translation>
    </message>
    <message>
        <source>API key helper</source>
        <translation>API 密钥助手</translation>
    </message>
    <message>
        <source>Permissions</source>
        <translation>权限</translation>
    </message>
    <message>
        <source>&amp;Trust folder</source>
        <translation>信任文件夹(&amp;T)</translation>
    </message>
    <message>
        <source>Open &amp;without trusting</source>
        <translation>不信任并打开(&amp;W)</translation>
    </message>
    <message>
        <source>No earlier sessions
in this folder</source>
        <translation>此文件夹中
没有更早的会话</translation>
    </message>
    <message>
        <source>Still opening the folder — one moment…</source>
        <translation>仍在打开文件夹——请稍候…</translation>
    </message>
    <message>
        <source>Open a folder first (File ▸ Open Folder…, Ctrl+O).</source>
        <translation>请先打开一个文件夹（文件 ▸ 打开文件夹…，Ctrl+O）。</translation>
    </message>
    <message>
        <source>Model for this session: {0}</source>
        <translation>本会话的模型：{0}</translation>
    </message>
    <message>
        <source>Permission mode: {0}</source>
        <translation>权限模式：{0}</translation>
    </message>
    <message>
        <source>Bypass permissions is on: tools run without asking. Pick another mode to turn it off.</source>
        <translation>“绕过权限”已开启：工具不经询问即运行。选择其他模式即可关闭。</translation>
    </message>
    <message>
        <source>Find in conversation (Enter: next, Shift+Enter: previous, Esc: close)</source>
        <translation>在对话中查找（Enter：下一个，Shift+Enter：上一个，Esc：关闭）</translation>
    </message>
    <message>
        <source>MCP &amp;Servers…</source>
        <translation>MCP 服务器(&amp;S)…</translation>
    </message>
    <message>
        <source>Closing the session…</source>
        <translation>正在关闭会话…</translation>
    </message>
    <message>
        <source>No API key is set up, so the agent cannot talk to a model. {0} opens as soon as a key is saved.</source>
        <translation>尚未设置 API 密钥，代理无法与模型通信。保存密钥后将立即打开 {0}。</translation>
    </message>
    <message>
        <source>Needs you ({0})</source>
        <translation>需要你（{0}）</translation>
    </message>
    <message>
        <source>New</source>
        <translation>新建</translation>
    </message>
    <message>
        <source>Working</source>
        <translation>工作中</translation>
    </message>
    <message>
        <source>Done</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>Stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>now</source>
        <translation>刚刚</translation>
    </message>
    <message>
        <source>{0} s</source>
        <translation>{0} 秒</translation>
    </message>
    <message>
        <source>{0} min</source>
        <translation>{0} 分钟</translation>
    </message>
    <message>
        <source>{0} h</source>
        <translation>{0} 小时</translation>
    </message>
    <message>
        <source>(new session)</source>
        <translation>（新会话）</translation>
    </message>
    <message>
        <source>Bypass permissions stays off.</source>
        <translation>“绕过权限”保持关闭。</translation>
    </message>
    <message>
        <source>Don&apos;t ask is on: every tool that no rule allows is denied without asking — edits too. Pick another mode to turn it off.</source>
        <translation>“不询问”已开启：任何没有规则允许的工具都会被直接拒绝，不再询问——编辑也一样。选择其他模式即可关闭。</translation>
    </message>
    <message>
        <source>Permission mode {0} is not available here.</source>
        <translation>此处不可使用权限模式 {0}。</translation>
    </message>
    <message>
        <source>You denied {0} and told the agent:</source>
        <translation>你拒绝了 {0}，并告诉代理：</translation>
    </message>
    <message>
        <source>The conversation is kept; Restart session resumes it in a new process.</source>
        <translation>对话已保留；“重启会话”会在新进程中恢复它。</translation>
    </message>
    <message>
        <source>Restart session</source>
        <translation>重启会话</translation>
    </message>
    <message>
        <source>Retry the last message</source>
        <translation>重试上一条消息</translation>
    </message>
    <message>
        <source>{0} tokens · ${1:.2f}</source>
        <translation>{0} 个 token · ${1:.2f}</translation>
    </message>
    <message>
        <source>Idle</source>
        <translation>空闲</translation>
    </message>
    <message>
        <source>Thinking…</source>
        <translation>思考中…</translation>
    </message>
    <message>
        <source>Responding…</source>
        <translation>回复中…</translation>
    </message>
    <message>
        <source>Running {0}…</source>
        <translation>正在运行 {0}…</translation>
    </message>
    <message>
        <source>Running a tool…</source>
        <translation>正在运行工具…</translation>
    </message>
    <message>
        <source>Waiting for approval: {0}</source>
        <translation>等待批准：{0}</translation>
    </message>
    <message>
        <source>Waiting for approval</source>
        <translation>等待批准</translation>
    </message>
    <message>
        <source>Retrying: {0}</source>
        <translation>正在重试：{0}</translation>
    </message>
    <message>
        <source>Error: {0}</source>
        <translation>错误：{0}</translation>
    </message>
    <message>
        <source>Stopping…</source>
        <translation>正在停止…</translation>
    </message>
    <message>
        <source>Tour</source>
        <translation>导览</translation>
    </message>
    <message>
        <source>Open a folder to start</source>
        <translation>打开一个文件夹以开始</translation>
    </message>
    <message>
        <source>File ▸ Open Folder… (Ctrl+O), then ask for a change.</source>
        <translation>文件 ▸ 打开文件夹…（Ctrl+O），然后提出修改请求。</translation>
    </message>
    <message>
        <source>Every edit is shown as a diff and waits for your Allow.</source>
        <translation>每一处修改都会以差异显示，并等待您允许。</translation>
    </message>
    <message>
        <source>Welcome to the tour</source>
        <translation>欢迎体验导览</translation>
    </message>
    <message>
        <source>A scripted model works on a copy of a sample project.</source>
        <translation>脚本模型会在示例项目的副本上工作。</translation>
    </message>
    <message>
        <source>Press Enter to send the prepared prompt, then review and allow each edit.</source>
        <translation>按 Enter 发送预设的提示，然后审阅并允许每一处修改。</translation>
    </message>
    <message>
        <source>What should we change?</source>
        <translation>要修改什么？</translation>
    </message>
    <message>
        <source>Describe the change below and press Enter.</source>
        <translation>在下方描述修改并按 Enter。</translation>
    </message>
    <message>
        <source>The agent reads freely; writes wait for your approval.</source>
        <translation>代理可以自由读取；写入需等待您的批准。</translation>
    </message>
    <message>
        <source>Show MCP servers</source>
        <translation>显示 MCP 服务器</translation>
    </message>
    <message>
        <source>Could not restart {0}: {1}</source>
        <translation>无法重启 {0}：{1}</translation>
    </message>
    <message>
        <source>Settings saved.</source>
        <translation>设置已保存。</translation>
    </message>
    <message>
        <source>Keyboard Shortcuts</source>
        <translation>键盘快捷键</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <source>New line</source>
        <translation>换行</translation>
    </message>
    <message>
        <source>Recall last prompt</source>
        <translation>调出上一条输入</translation>
    </message>
    <message>
        <source>Stop the agent / Deny in the dialog</source>
        <translation>停止代理 / 在对话框中拒绝</translation>
    </message>
    <message>
        <source>Open folder</source>
        <translation>打开文件夹</translation>
    </message>
    <message>
        <source>New session</source>
        <translation>新建会话</translation>
    </message>
    <message>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>Cycle permission mode</source>
        <translation>切换权限模式</translation>
    </message>
    <message>
        <source>Next waiting question (inbox)</source>
        <translation>下一个等待的问题（收件箱）</translation>
    </message>
    <message>
        <source>MCP servers</source>
        <translation>MCP 服务器</translation>
    </message>
    <message>
        <source>Focus the prompt</source>
        <translation>聚焦输入框</translation>
    </message>
    <message>
        <source>About Desktop Agent</source>
        <translation>关于 Desktop Agent</translation>
    </message>
    <message>
        <source>&lt;b&gt;Desktop Agent&lt;/b&gt; {0}&lt;br/&gt;A desktop coding agent: review every diff, allow or deny every write.</source>
        <translation>&lt;b&gt;Desktop Agent&lt;/b&gt; {0}&lt;br/&gt;桌面编程代理：审阅每一处差异，允许或拒绝每一次写入。</translation>
    </message>
    <message>
        <source>scripted (offline tour)</source>
        <translation>脚本模型（离线导览）</translation>
    </message>
    <message>
        <source>{0} did not open: {1}. Nothing was started, so no rule is lost: fix the file, then try again.</source>
        <translation>{0} 无法打开:{1}。没有启动任何内容,因此不会丢失任何规则:请修正该文件后重试。</translation>
    </message>
    <message>
        <source>Try again</source>
        <translation>重试</translation>
    </message>
    <message>
        <source>…and {0} more (see stderr).</source>
        <translation>……还有 {0} 条(见 stderr)。</translation>
    </message>
    <message>
        <source>Some settings entries are not valid; each was skipped and every other entry is in force:</source>
        <translation>部分设置条目无效;这些条目已跳过,其余条目均已生效:</translation>
    </message>
    <message>
        <source>New Session in &amp;Worktree…</source>
        <translation>在工作树中新建会话(&amp;W)…</translation>
    </message>
    <message>
        <source>&amp;Review Worktree Changes…</source>
        <translation>审阅工作树更改(&amp;R)…</translation>
    </message>
    <message>
        <source>Cannot start a worktree session: {0}</source>
        <translation>无法启动工作树会话：{0}</translation>
    </message>
    <message>
        <source>This folder has no worktree session to review (File ▸ New Session in Worktree…).</source>
        <translation>此文件夹没有可审阅的工作树会话（文件 ▸ 在工作树中新建会话…）。</translation>
    </message>
    <message>
        <source>Review changes — {0}</source>
        <translation>审阅更改 — {0}</translation>
    </message>
    <message>
        <source>Your session in {0} keeps running in the background host. Open the folder again to see it; desktop-agent host --status lists what runs.</source>
        <translation>你在 {0} 中的会话将在后台主机中继续运行。再次打开该文件夹即可看到它；desktop-agent host --status 列出正在运行的内容。</translation>
    </message>
    <message>
        <source>Leaving the session running in the background host…</source>
        <translation>正在让会话在后台主机中继续运行…</translation>
    </message>
</context>
<context>
    <name>MarkdownBlock</name>
    <message>
        <source>Agent message</source>
        <translation>代理消息</translation>
    </message>
</context>
<context>
    <name>MessageQueue</name>
    <message>
        <source>Queued messages</source>
        <translation>排队的消息</translation>
    </message>
    <message>
        <source>Send &amp;now</source>
        <translation>立即发送(&amp;N)</translation>
    </message>
    <message>
        <source>{0} queued · held (the turn did not finish): Send now to go on</source>
        <translation>{0} 条排队中 · 已暂停（本轮未完成）：点“立即发送”继续</translation>
    </message>
    <message>
        <source>{0} queued · sent when this turn ends</source>
        <translation>{0} 条排队中 · 本轮结束后发送</translation>
    </message>
</context>
<context>
    <name>Modes</name>
    <message>
        <source>Default</source>
        <translation>默认</translation>
    </message>
    <message>
        <source>Accept edits</source>
        <translation>接受编辑</translation>
    </message>
    <message>
        <source>Plan</source>
        <translation>计划</translation>
    </message>
    <message>
        <source>Bypass</source>
        <translation>绕过</translation>
    </message>
    <message>
        <source>Don&apos;t ask — deny anything not allowed</source>
        <translation>不询问——拒绝一切未被允许的操作</translation>
    </message>
    <message>
        <source>Bypass — nothing asks</source>
        <translation>绕过——不再询问</translation>
    </message>
    <message>
        <source>Don&apos;t ask — denies anything not allowed</source>
        <translation>不询问——拒绝一切未被允许的操作</translation>
    </message>
    <message>
        <source>Turn on Bypass permissions?</source>
        <translation>开启“绕过权限”？</translation>
    </message>
    <message>
        <source>Bypass permissions: every tool runs without asking — edits, commands, reads outside the folder. Deny rules still apply. Turn it on?</source>
        <translation>绕过权限：所有工具都不再询问即运行——编辑、命令、读取文件夹外的文件。拒绝规则仍然生效。要开启吗？</translation>
    </message>
    <message>
        <source>Cancel  Esc</source>
        <translation>取消  Esc</translation>
    </message>
    <message>
        <source>Turn on Bypass</source>
        <translation>开启绕过</translation>
    </message>
</context>
<context>
    <name>NetworkView</name>
    <message>
        <source>Show network</source>
        <translation>显示网络</translation>
    </message>
    <message>
        <source>Allow {0} for this session</source>
        <translation>在此会话中允许 {0}</translation>
    </message>
    <message>
        <source>A sandboxed command was refused network access to {0}:{1}: it is not in sandbox.network.allowedDomains.</source>
        <translation>一条沙箱命令被拒绝访问网络 {0}:{1}：它不在 sandbox.network.allowedDomains 中。</translation>
    </message>
    <message>
        <source>Network</source>
        <translation>网络</translation>
    </message>
    <message>
        <source>Refused only</source>
        <translation>仅显示被拒绝的</translation>
    </message>
    <message>
        <source>Sandboxed commands reach only the hosts in sandbox.network.allowedDomains, through a proxy that records every request here. With no list they have no network at all.</source>
        <translation>沙箱中的命令只能通过代理访问 sandbox.network.allowedDomains 中的主机，代理会在此记录每个请求。没有该列表时，它们完全没有网络。</translation>
    </message>
    <message>
        <source>No network requests in this session.</source>
        <translation>此会话没有网络请求。</translation>
    </message>
    <message>
        <source>{0} requests: {1} allowed, {2} refused</source>
        <translation>{0} 个请求：{1} 个允许，{2} 个被拒绝</translation>
    </message>
    <message>
        <source>Could not allow {0} for this session ({1}): add it to the settings instead</source>
        <translation>无法为此会话允许 {0}（{1}）：请改为将其添加到设置中</translation>
    </message>
    <message>
        <source>{0} is allowed for this session from the next command on</source>
        <translation>从下一条命令起，此会话允许访问 {0}</translation>
    </message>
    <message>
        <source>{0} added to {1} (counts from the next session)</source>
        <translation>已将 {0} 添加到 {1}（从下一个会话起生效）</translation>
    </message>
</context>
<context>
    <name>PermissionDialog</name>
    <message>
        <source>Permission request</source>
        <translation>权限请求</translation>
    </message>
    <message>
        <source>Allow {0}: {1}?</source>
        <translation>允许 {0}：{1}？</translation>
    </message>
    <message>
        <source>Allow {0}?</source>
        <translation>允许 {0}？</translation>
    </message>
    <message>
        <source>in {0}</source>
        <translation>位于 {0}</translation>
    </message>
    <message>
        <source>Why: {0}</source>
        <translation>原因：{0}</translation>
    </message>
    <message>
        <source>The executor sent no patch: this one is computed here, from the proposed input and the file on disk.</source>
        <translation>执行器没有发送补丁：此补丁由本窗口根据提议的输入和磁盘上的文件计算得出。</translation>
    </message>
    <message>
        <source>Previous hunk  ([ or Alt+↑)</source>
        <translation>上一个差异块  ([ 或 Alt+↑)</translation>
    </message>
    <message>
        <source>Next hunk  (] or Alt+↓)</source>
        <translation>下一个差异块  (] 或 Alt+↓)</translation>
    </message>
    <message>
        <source>[ ] move between hunks · X accepts or rejects a hunk</source>
        <translation>[ ] 在差异块之间移动 · X 接受或拒绝一个差异块</translation>
    </message>
    <message>
        <source>[ ] move between hunks</source>
        <translation>[ ] 在差异块之间移动</translation>
    </message>
    <message>
        <source>Proposed change</source>
        <translation>拟议的更改</translation>
    </message>
    <message>
        <source>Command</source>
        <translation>命令</translation>
    </message>
    <message>
        <source>Sub-commands:</source>
        <translation>子命令：</translation>
    </message>
    <message>
        <source>Full tool input</source>
        <translation>完整的工具输入</translation>
    </message>
    <message>
        <source>Full input</source>
        <translation>完整输入</translation>
    </message>
    <message>
        <source>✎ Edit</source>
        <translation>✎ 编辑</translation>
    </message>
    <message>
        <source>Edit the proposed text before allowing it</source>
        <translation>在允许之前编辑拟议的文本</translation>
    </message>
    <message>
        <source>Edit the proposal</source>
        <translation>编辑提议</translation>
    </message>
    <message>
        <source>Proposed text</source>
        <translation>拟议的文本</translation>
    </message>
    <message>
        <source>Feedback for the agent if you deny (optional)</source>
        <translation>拒绝时给代理的反馈（可选）</translation>
    </message>
    <message>
        <source>Feedback for the agent</source>
        <translation>给代理的反馈</translation>
    </message>
    <message>
        <source>&amp;Deny  Esc</source>
        <translation>拒绝(&amp;D)  Esc</translation>
    </message>
    <message>
        <source>Allow for &amp;session</source>
        <translation>本次会话内允许(&amp;S)</translation>
    </message>
    <message>
        <source>Allow, then {0} for the session</source>
        <translation>允许,然后本会话使用 {0}</translation>
    </message>
    <message>
        <source>Allow this call and switch the whole session to {0}</source>
        <translation>允许此次调用,并将整个会话切换为 {0}</translation>
    </message>
    <message>
        <source>&amp;Allow  ⏎</source>
        <translation>允许(&amp;A)  ⏎</translation>
    </message>
    <message>
        <source>Allow for session adds: {0}</source>
        <translation>“本次会话内允许”将添加：{0}</translation>
    </message>
    <message>
        <source>No session rule is available for this request.</source>
        <translation>此请求没有可用的会话规则。</translation>
    </message>
    <message numerus="yes">
        <source>%n more waiting</source>
        <translation>
            <numerusform>还有 %n 个在等待</numerusform>
        </translation>
    </message>
    <message>
        <source>Default</source>
        <translation>默认</translation>
    </message>
    <message>
        <source>Accept edits</source>
        <translation>接受编辑</translation>
    </message>
    <message>
        <source>Plan</source>
        <translation>计划</translation>
    </message>
    <message>
        <source>Bypass</source>
        <translation>绕过</translation>
    </message>
    <message>
        <source>Don&apos;t ask</source>
        <translation>不询问</translation>
    </message>
    <message>
        <source>{0} mode asks before this, and no rule allows it</source>
        <translation>{0}模式会在此操作前询问，且没有规则允许它</translation>
    </message>
    <message>
        <source>the {0} rule {1} asks for this</source>
        <translation>{0}规则 {1} 要求对此进行询问</translation>
    </message>
    <message>
        <source>no textual change</source>
        <translation>无文本更改</translation>
    </message>
    <message>
        <source>rejected</source>
        <translation>已拒绝</translation>
    </message>
    <message>
        <source>hunk {0} of {1}</source>
        <translation>第 {0} 个差异块，共 {1} 个</translation>
    </message>
    <message>
        <source>&amp;Allow {0} of {1} hunks</source>
        <translation>允许 {0}/{1} 个差异块(&amp;A)</translation>
    </message>
    <message>
        <source>&amp;Allow {0} hunks (+{1} −{2})</source>
        <translation>允许 {0} 个差异块 (+{1} −{2})(&amp;A)</translation>
    </message>
    <message>
        <source>&amp;Allow</source>
        <translation>允许(&amp;A)</translation>
    </message>
    <message>
        <source>Every hunk is rejected: nothing would be written. Deny instead.</source>
        <translation>所有差异块均已拒绝：不会写入任何内容。请改为拒绝。</translation>
    </message>
</context>
<context>
    <name>Phone</name>
    <message>
        <source>just now</source>
        <translation>刚刚</translation>
    </message>
    <message>
        <source>{0} min ago</source>
        <translation>{0} 分钟前</translation>
    </message>
    <message>
        <source>{0} h ago</source>
        <translation>{0} 小时前</translation>
    </message>
    <message>
        <source>{0} days ago</source>
        <translation>{0} 天前</translation>
    </message>
    <message>
        <source>Pair a new device?</source>
        <translation>配对新设备？</translation>
    </message>
    <message>
        <source>“{0}” ({1}) wants to answer this computer&apos;s questions. Pair it only if it shows the same code:</source>
        <translation>“{0}”（{1}）想要回答这台电脑的问题。只有当它显示相同的代码时才配对：</translation>
    </message>
    <message>
        <source>Refuse  Esc</source>
        <translation>拒绝  Esc</translation>
    </message>
    <message>
        <source>Pair</source>
        <translation>配对</translation>
    </message>
    <message>
        <source>Answer from my phone</source>
        <translation>用手机回答</translation>
    </message>
    <message>
        <source>A page on this computer&apos;s network address, HTTPS only; each phone is paired once and can be revoked here.</source>
        <translation>这台电脑网络地址上的一个页面，仅限 HTTPS；每部手机只需配对一次，并可在此撤销。</translation>
    </message>
    <message>
        <source>Show pairing code</source>
        <translation>显示配对码</translation>
    </message>
    <message>
        <source>Scan it with the phone&apos;s camera. The code works once, for 5 minutes.</source>
        <translation>用手机相机扫描。此代码只能使用一次，有效期 5 分钟。</translation>
    </message>
    <message>
        <source>Paired devices</source>
        <translation>已配对的设备</translation>
    </message>
    <message>
        <source>None yet</source>
        <translation>尚无</translation>
    </message>
    <message>
        <source>last used {0}</source>
        <translation>上次使用：{0}</translation>
    </message>
    <message>
        <source>Revoke</source>
        <translation>撤销</translation>
    </message>
</context>
<context>
    <name>PromptEdit</name>
    <message>
        <source>Prompt</source>
        <translation>输入框</translation>
    </message>
</context>
<context>
    <name>QueuedRow</name>
    <message>
        <source>Edit the queued message</source>
        <translation>编辑排队的消息</translation>
    </message>
    <message>
        <source>Edit</source>
        <translation>编辑</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Remove the queued message</source>
        <translation>移除排队的消息</translation>
    </message>
    <message>
        <source>Queued message: {0}</source>
        <translation>排队的消息：{0}</translation>
    </message>
    <message>
        <source>Save</source>
        <translation>保存</translation>
    </message>
</context>
<context>
    <name>RequestRow</name>
    <message>
        <source>refused</source>
        <translation>已拒绝</translation>
    </message>
    <message>
        <source>allowed</source>
        <translation>已允许</translation>
    </message>
    <message>
        <source>{0} up, {1} down</source>
        <translation>上传 {0}，下载 {1}</translation>
    </message>
    <message>
        <source>Allow for this session</source>
        <translation>在此会话中允许</translation>
    </message>
    <message>
        <source>Allow {0} for this session</source>
        <translation>在此会话中允许 {0}</translation>
    </message>
    <message>
        <source>Add to settings</source>
        <translation>添加到设置</translation>
    </message>
    <message>
        <source>Add {0} to the folder&apos;s settings</source>
        <translation>将 {0} 添加到文件夹的设置中</translation>
    </message>
</context>
<context>
    <name>RetryCard</name>
    <message>
        <source>Retrying in {0} s (attempt {1} of {2})</source>
        <translation>{0} 秒后重试（第 {1} 次，共 {2} 次）</translation>
    </message>
    <message>
        <source>Retrying now (attempt {0} of {1})</source>
        <translation>正在重试（第 {0} 次，共 {1} 次）</translation>
    </message>
    <message>
        <source>Went through after {0} retries.</source>
        <translation>重试 {0} 次后成功。</translation>
    </message>
    <message>
        <source>Retrying cancelled after {0} retries.</source>
        <translation>重试 {0} 次后已取消。</translation>
    </message>
    <message>
        <source>Gave up after {0} retries.</source>
        <translation>重试 {0} 次后放弃。</translation>
    </message>
</context>
<context>
    <name>RevertDialog</name>
    <message>
        <source>Re-apply the change to {0}?</source>
        <translation>重新应用对 {0} 的更改？</translation>
    </message>
    <message>
        <source>Revert the change to {0}?</source>
        <translation>撤销对 {0} 的更改？</translation>
    </message>
    <message>
        <source>This creates {0} again, as this change wrote it.</source>
        <translation>这会按此更改写入的内容重新创建 {0}。</translation>
    </message>
    <message>
        <source>This writes this change into {0} again (+{1} −{2}).</source>
        <translation>这会把此更改再次写入 {0}（+{1} −{2}）。</translation>
    </message>
    <message>
        <source>This deletes {0}, which this change created.</source>
        <translation>这将删除此更改创建的 {0}。</translation>
    </message>
    <message>
        <source>This writes {0} back as it was before this change (+{1} −{2} undone).</source>
        <translation>这会把 {0} 写回此更改之前的状态（撤销 +{1} −{2}）。</translation>
    </message>
    <message>
        <source>If the file changed since the revert, nothing is written and you are told why.</source>
        <translation>如果文件在撤销之后被修改过，则不会写入任何内容，并告诉你原因。</translation>
    </message>
    <message>
        <source>If the file changed since, nothing is written and you are told why.</source>
        <translation>如果文件在此之后被修改过，则不会写入任何内容，并会告诉你原因。</translation>
    </message>
    <message>
        <source>&amp;Cancel  Esc</source>
        <translation>取消(&amp;C)  Esc</translation>
    </message>
    <message>
        <source>&amp;Revert</source>
        <translation>撤销(&amp;R)</translation>
    </message>
    <message>
        <source>Re&amp;do</source>
        <translation>重做(&amp;D)</translation>
    </message>
</context>
<context>
    <name>ReviewView</name>
    <message>
        <source>Loading the worktree&apos;s changes…</source>
        <translation>正在读取工作树的更改…</translation>
    </message>
    <message>
        <source>Changed files</source>
        <translation>已更改的文件</translation>
    </message>
    <message>
        <source>The file&apos;s change</source>
        <translation>文件的更改</translation>
    </message>
    <message>
        <source>Keep in worktree</source>
        <translation>保留在工作树中</translation>
    </message>
    <message>
        <source>Discard</source>
        <translation>丢弃</translation>
    </message>
    <message>
        <source>Apply to the folder</source>
        <translation>应用到文件夹</translation>
    </message>
    <message>
        <source>Cannot review {0}: {1}</source>
        <translation>无法审阅 {0}：{1}</translation>
    </message>
    <message>
        <source>⎇ {0} — {1} changed files, {2} changes</source>
        <translation>⎇ {0} — {1} 个已更改的文件，{2} 处更改</translation>
    </message>
    <message>
        <source>⎇ {0} — nothing left to review</source>
        <translation>⎇ {0} — 没有需要审阅的内容</translation>
    </message>
    <message>
        <source>new</source>
        <translation>新文件</translation>
    </message>
    <message>
        <source>deleted</source>
        <translation>已删除</translation>
    </message>
    <message>
        <source>renamed</source>
        <translation>已重命名</translation>
    </message>
    <message>
        <source>type changed</source>
        <translation>类型已更改</translation>
    </message>
    <message>
        <source>mode</source>
        <translation>权限</translation>
    </message>
    <message>
        <source>binary</source>
        <translation>二进制</translation>
    </message>
    <message>
        <source>Create this new file</source>
        <translation>创建此新文件</translation>
    </message>
    <message>
        <source>Delete this file</source>
        <translation>删除此文件</translation>
    </message>
    <message>
        <source>Rename {0} → {1}</source>
        <translation>重命名 {0} → {1}</translation>
    </message>
    <message>
        <source>Make it executable</source>
        <translation>设为可执行</translation>
    </message>
    <message>
        <source>Make it not executable</source>
        <translation>设为不可执行</translation>
    </message>
    <message>
        <source>Replace the binary content ({0} → {1} bytes)</source>
        <translation>替换二进制内容（{0} → {1} 字节）</translation>
    </message>
    <message>
        <source>Change the symbolic link</source>
        <translation>更改符号链接</translation>
    </message>
    <message>
        <source>Apply {0} of {1} changes to the folder</source>
        <translation>将 {1} 处更改中的 {0} 处应用到文件夹</translation>
    </message>
    <message>
        <source>Discard {0}</source>
        <translation>丢弃 {0} 处</translation>
    </message>
    <message>
        <source>Applying…</source>
        <translation>正在应用…</translation>
    </message>
    <message>
        <source>Discarding…</source>
        <translation>正在丢弃…</translation>
    </message>
    <message>
        <source>(The session could not record this: the model was not told.)</source>
        <translation>（会话无法记录此操作：未告知模型。）</translation>
    </message>
    <message>
        <source>Nothing was written: {0}</source>
        <translation>未写入任何内容：{0}</translation>
    </message>
    <message>
        <source>Conflicts with the folder — nothing was written:</source>
        <translation>与文件夹冲突 — 未写入任何内容：</translation>
    </message>
</context>
<context>
    <name>Rewind</name>
    <message>
        <source>Stop the running turn before rewinding.</source>
        <translation>请先停止正在运行的回合，再回退。</translation>
    </message>
    <message>
        <source>Cannot rewind: {0}</source>
        <translation>无法回退：{0}</translation>
    </message>
    <message>
        <source>The restore failed: {0}</source>
        <translation>恢复失败：{0}</translation>
    </message>
    <message>
        <source>Restored {0} files (+{1} −{2}).</source>
        <translation>已恢复 {0} 个文件（+{1} −{2}）。</translation>
    </message>
    <message>
        <source>Left as you changed them: {0}.</source>
        <translation>保留了你的修改：{0}。</translation>
    </message>
    <message>
        <source>{0} paths behind links were not touched.</source>
        <translation>{0} 个位于链接之后的路径未被改动。</translation>
    </message>
    <message>
        <source>Undo restore</source>
        <translation>撤销恢复</translation>
    </message>
    <message>
        <source>Undo failed: {0}</source>
        <translation>撤销失败：{0}</translation>
    </message>
    <message>
        <source>Restore undone: {0} files put back.</source>
        <translation>已撤销恢复：{0} 个文件已放回。</translation>
    </message>
</context>
<context>
    <name>RewindDialog</name>
    <message>
        <source>Rewind to before this message?</source>
        <translation>回退到这条消息之前？</translation>
    </message>
    <message>
        <source>Restoring files changes {0} files (+{1} −{2}) back to how they were just before this message.</source>
        <translation>恢复文件会把 {0} 个文件（+{1} −{2}）改回这条消息之前的样子。</translation>
    </message>
    <message>
        <source>The files are already as they were just before this message.</source>
        <translation>文件已经是这条消息之前的样子。</translation>
    </message>
    <message>
        <source>Message:</source>
        <translation>消息：</translation>
    </message>
    <message>
        <source>Not restored, since you have changed the same lines since ({0}); they stay as you left them:</source>
        <translation>未恢复：此后你修改了相同的行（{0}）；它们保持你留下的样子：</translation>
    </message>
    <message>
        <source>Your later edits to other parts of a file are kept. &quot;Undo restore&quot; puts every byte back. Rewinding the conversation opens a copy from before this message; the original stays.</source>
        <translation>你之后对文件其他部分的修改会保留。“撤销恢复”会放回每一个字节。回退对话会打开这条消息之前的副本；原对话保留。</translation>
    </message>
    <message>
        <source>&amp;Cancel  Esc</source>
        <translation>取消(&amp;C)  Esc</translation>
    </message>
    <message>
        <source>Restore &amp;files</source>
        <translation>恢复文件(&amp;F)</translation>
    </message>
    <message>
        <source>Rewind c&amp;onversation</source>
        <translation>回退对话(&amp;O)</translation>
    </message>
    <message>
        <source>&amp;Both</source>
        <translation>两者(&amp;B)</translation>
    </message>
    <message>
        <source>restore</source>
        <translation>恢复</translation>
    </message>
    <message>
        <source>delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>create</source>
        <translation>创建</translation>
    </message>
    <message>
        <source>merge</source>
        <translation>合并</translation>
    </message>
    <message>
        <source>permissions</source>
        <translation>权限</translation>
    </message>
    <message>
        <source>folder</source>
        <translation>文件夹</translation>
    </message>
    <message>
        <source>remove folder</source>
        <translation>删除文件夹</translation>
    </message>
    <message>
        <source>hard link</source>
        <translation>硬链接</translation>
    </message>
</context>
<context>
    <name>ServerRow</name>
    <message>
        <source>&amp;Restart</source>
        <translation>重启(&amp;R)</translation>
    </message>
    <message>
        <source>Restart the MCP server {0}</source>
        <translation>重启 MCP 服务器 {0}</translation>
    </message>
    <message>
        <source>restarting…</source>
        <translation>正在重启…</translation>
    </message>
    <message>
        <source>connected</source>
        <translation>已连接</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>pending</source>
        <translation>等待中</translation>
    </message>
    <message>
        <source>streamable HTTP</source>
        <translation>可流式 HTTP</translation>
    </message>
    <message>
        <source>stdio</source>
        <translation>stdio</translation>
    </message>
    <message>
        <source>starts with the first message</source>
        <translation>随第一条消息启动</translation>
    </message>
    <message>
        <source>from {0}</source>
        <translation>来自 {0}</translation>
    </message>
    <message>
        <source>restarted {0}×</source>
        <translation>已重启 {0} 次</translation>
    </message>
    <message>
        <source>not restarted</source>
        <translation>未重启</translation>
    </message>
    <message>
        <source>Tools ({0}): {1}</source>
        <translation>工具（{0}）：{1}</translation>
    </message>
    <message>
        <source>Its tools are listed once it starts</source>
        <translation>启动后列出其工具</translation>
    </message>
    <message>
        <source>No tools listed yet</source>
        <translation>尚未列出工具</translation>
    </message>
    <message>
        <source>Restarting…</source>
        <translation>正在重启…</translation>
    </message>
</context>
<context>
    <name>ServersView</name>
    <message>
        <source>MCP Servers</source>
        <translation>MCP 服务器</translation>
    </message>
    <message>
        <source>Servers come from the folder&apos;s .mcp.json (only in a trusted folder), the mcpServers of your settings (~/.claude/settings.json, ~/.claude.json) and --mcp-config. Their tools ask before they run, like any tool that is not read-only.</source>
        <translation>服务器来自文件夹的 .mcp.json（仅在受信任的文件夹中）、您设置中的 mcpServers（~/.claude/settings.json、~/.claude.json）以及 --mcp-config。与任何非只读工具一样，它们的工具在运行前会先征求您的同意。</translation>
    </message>
    <message>
        <source>No MCP servers are configured for this session.</source>
        <translation>此会话未配置 MCP 服务器。</translation>
    </message>
    <message>
        <source>{0} servers: {1} connected, {2} failed, {3} pending</source>
        <translation>{0} 个服务器：{1} 个已连接，{2} 个失败，{3} 个等待中</translation>
    </message>
    <message>
        <source>(MCP servers start with the first message)</source>
        <translation>（MCP 服务器随第一条消息启动）</translation>
    </message>
</context>
<context>
    <name>SettingsDialog</name>
    <message>
        <source>Welcome to Desktop Agent</source>
        <translation>欢迎使用 Desktop Agent</translation>
    </message>
    <message>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>API key</source>
        <translation>API 密钥</translation>
    </message>
    <message>
        <source>set by OPENAI_API_KEY in the environment</source>
        <translation>由环境变量 OPENAI_API_KEY 设置</translation>
    </message>
    <message>
        <source>optional: local servers need none</source>
        <translation>可选：本地服务器无需密钥</translation>
    </message>
    <message>
        <source>set by ANTHROPIC_API_KEY in the environment</source>
        <translation>已由环境变量 ANTHROPIC_API_KEY 设置</translation>
    </message>
    <message>
        <source>stored in the system keyring — type to replace</source>
        <translation>已保存在系统密钥环中——输入新值以替换</translation>
    </message>
    <message>
        <source>stored in a private file — type to replace</source>
        <translation>已保存在私有文件中——输入新值以替换</translation>
    </message>
    <message>
        <source>&amp;API key</source>
        <translation>API 密钥(&amp;A)</translation>
    </message>
    <message>
        <source>&lt;b&gt;Connect a model to get started.&lt;/b&gt;&lt;br/&gt;Desktop Agent talks to Anthropic&apos;s Messages API (or any compatible endpoint), or to an OpenAI-compatible server such as Ollama or LM Studio. Your key stays on this computer.</source>
        <translation>&lt;b&gt;连接一个模型即可开始。&lt;/b&gt;&lt;br/&gt;Desktop Agent 使用 Anthropic 的 Messages API（或任何兼容的端点），或 Ollama、LM Studio 等 OpenAI 兼容服务器。您的密钥只保存在这台电脑上。</translation>
    </message>
    <message>
        <source>Provider</source>
        <translation>提供方</translation>
    </message>
    <message>
        <source>Anthropic</source>
        <translation>Anthropic</translation>
    </message>
    <message>
        <source>OpenAI-compatible (Ollama, LM Studio, vLLM, OpenRouter…)</source>
        <translation>OpenAI 兼容（Ollama、LM Studio、vLLM、OpenRouter…）</translation>
    </message>
    <message>
        <source>P&amp;rovider</source>
        <translation>提供方(&amp;R)</translation>
    </message>
    <message>
        <source>Base URL</source>
        <translation>基础 URL</translation>
    </message>
    <message>
        <source>&amp;Base URL</source>
        <translation>基础 URL(&amp;B)</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>&amp;Model</source>
        <translation>模型(&amp;M)</translation>
    </message>
    <message>
        <source>Default &amp;permissions</source>
        <translation>默认权限(&amp;P)</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <source>System default</source>
        <translation>系统默认</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <source>The language changes at the next start.</source>
        <translation>语言将在下次启动时更改。</translation>
    </message>
    <message>
        <source>Theme</source>
        <translation>主题</translation>
    </message>
    <message>
        <source>System</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>Light</source>
        <translation>浅色</translation>
    </message>
    <message>
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <source>&amp;Theme</source>
        <translation>主题(&amp;T)</translation>
    </message>
    <message>
        <source>Run sessions</source>
        <translation>运行会话</translation>
    </message>
    <message>
        <source>in this window (default)</source>
        <translation>在此窗口中（默认）</translation>
    </message>
    <message>
        <source>in a separate process</source>
        <translation>在单独的进程中</translation>
    </message>
    <message>
        <source>with Claude Code</source>
        <translation>使用 Claude Code</translation>
    </message>
    <message>
        <source>R&amp;un sessions</source>
        <translation>运行会话(&amp;U)</translation>
    </message>
    <message>
        <source>Claude Code path</source>
        <translation>Claude Code 路径</translation>
    </message>
    <message>
        <source>claude is not on PATH: enter its path</source>
        <translation>PATH 中没有 claude：请输入其路径</translation>
    </message>
    <message>
        <source>Claude &amp;Code path</source>
        <translation>Claude Code 路径(&amp;C)</translation>
    </message>
    <message>
        <source>A separate process keeps a crash or a runaway tool away from the window; with Claude Code, its tools run and this window reviews each change. Applies to the next session.</source>
        <translation>单独的进程可使崩溃或失控的工具不影响窗口；使用 Claude Code 时，由它运行工具，本窗口审阅每项更改。从下一个会话起生效。</translation>
    </message>
    <message>
        <source>Try the offline &amp;tour</source>
        <translation>体验离线导览(&amp;T)</translation>
    </message>
    <message>
        <source>A guided demo on a sample project with a scripted model — no key needed</source>
        <translation>在示例项目上使用脚本模型的引导演示——无需密钥</translation>
    </message>
    <message>
        <source>Enter an API key, or try the offline tour.</source>
        <translation>请输入 API 密钥，或体验离线导览。</translation>
    </message>
    <message>
        <source>Enter the server&apos;s base URL (for example http://localhost:11434/v1).</source>
        <translation>请输入服务器的基础 URL（例如 http://localhost:11434/v1）。</translation>
    </message>
    <message>
        <source>Enter the name of a model the server serves.</source>
        <translation>请输入该服务器提供的模型名称。</translation>
    </message>
    <message>
        <source>Claude Code (claude) is not on PATH: enter the path of its binary.</source>
        <translation>PATH 中没有 Claude Code（claude）：请输入其可执行文件的路径。</translation>
    </message>
    <message>
        <source>Not an executable file: {0}</source>
        <translation>不是可执行文件：{0}</translation>
    </message>
    <message>
        <source>Could not save the settings: {0}</source>
        <translation>无法保存设置：{0}</translation>
    </message>
    <message>
        <source>the server&apos;s model name, e.g. qwen2.5-coder:7b</source>
        <translation>服务器上的模型名称，例如 qwen2.5-coder:7b</translation>
    </message>
    <message>
        <source>&amp;Keep sessions running when the window closes</source>
        <translation>窗口关闭后保持会话运行(&amp;K)</translation>
    </message>
    <message>
        <source>Sessions run in the background host (desktop-agent host), started when needed; closing or losing the window leaves them running, and the window shows them again with their questions when it reopens. See it with desktop-agent host --status; stop it with desktop-agent host --stop. Applies to the next session.</source>
        <translation>会话在后台主机（desktop-agent host）中运行，需要时自动启动；关闭或丢失窗口后会话继续运行，窗口重新打开时会再次显示它们及其待回答的问题。用 desktop-agent host --status 查看它，用 desktop-agent host --stop 停止它。从下一个会话起生效。</translation>
    </message>
</context>
<context>
    <name>StopTurnDialog</name>
    <message>
        <source>Stop the running turn?</source>
        <translation>停止正在进行的回合?</translation>
    </message>
    <message>
        <source>The agent is still working in the session “{0}” ({1}).</source>
        <translation>智能体仍在会话“{0}”({1})中工作。</translation>
    </message>
    <message>
        <source>Right now it is {0}.</source>
        <translation>它现在{0}。</translation>
    </message>
    <message>
        <source>Stop interrupts the turn as the Stop button does — the conversation so far is kept and you can come back to it from the sessions list — and then {0}. Cancel keeps it running.</source>
        <translation>“停止”会像停止按钮一样中断本回合——目前的对话会保留,你可以从会话列表回到它——然后{0}。“取消”让它继续运行。</translation>
    </message>
    <message>
        <source>Stop the turn</source>
        <translation>停止本回合</translation>
    </message>
    <message>
        <source>&amp;Cancel  Esc</source>
        <translation>取消(&amp;C)  Esc</translation>
    </message>
</context>
<context>
    <name>ThinkingCard</name>
    <message>
        <source>Thinking</source>
        <translation>思考</translation>
    </message>
    <message>
        <source>Details</source>
        <translation>详情</translation>
    </message>
    <message>
        <source>Thinking…</source>
        <translation>思考中…</translation>
    </message>
    <message>
        <source>Thought for {0} s</source>
        <translation>思考了 {0} 秒</translation>
    </message>
</context>
<context>
    <name>ToolCard</name>
    <message>
        <source>(running…)</source>
        <translation>（运行中…）</translation>
    </message>
    <message>
        <source>… {0} more characters</source>
        <translation>… 还有 {0} 个字符</translation>
    </message>
    <message>
        <source>Input</source>
        <translation>输入</translation>
    </message>
    <message>
        <source>Details</source>
        <translation>详细信息</translation>
    </message>
    <message>
        <source>Result</source>
        <translation>结果</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>waiting for you</source>
        <translation>等待您的操作</translation>
    </message>
</context>
<context>
    <name>UserBlock</name>
    <message>
        <source>Your message</source>
        <translation>您的消息</translation>
    </message>
    <message>
        <source>you</source>
        <translation>您</translation>
    </message>
</context>
</TS>
