-- Drives crane-lsp from headless Neovim exactly as a user's config would (see docs/lsp-editors.md), then
-- writes what the editor saw to $CRANE_NVIM_OUT as JSON. Works on Neovim 0.7 (vim.lsp.start_client)
-- and 0.10+ (vim.lsp.start).
local result = {}

local function run()
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.CRANE_NVIM_FILE))
  local bufnr = vim.api.nvim_get_current_buf()
  local config = {
    name = "crane",
    cmd = vim.fn.json_decode(vim.env.CRANE_NVIM_CMD),
    root_dir = vim.fn.fnamemodify(vim.env.CRANE_NVIM_FILE, ":h"),
    init_options = { debounce = 200 },
  }
  local client_id
  if vim.lsp.start then
    client_id = vim.lsp.start(config)
    result.api = "vim.lsp.start"
  else
    client_id = vim.lsp.start_client(config)
    vim.lsp.buf_attach_client(bufnr, client_id)
    result.api = "vim.lsp.start_client"
  end
  local client = vim.lsp.get_client_by_id(client_id)
  vim.wait(30000, function() return client.initialized end, 50)
  -- settings pushed later, as `:lua client.notify(...)` or a plugin would
  client.notify("workspace/didChangeConfiguration", { settings = { crane = { debounce = 50 } } })

  -- attach the kernel as docs/lsp-editors.md says (the reply tells whether it worked)
  local attached = vim.lsp.buf_request_sync(bufnr, "workspace/executeCommand",
    { command = "crane.attachKernel", arguments = { vim.uri_from_bufnr(bufnr), vim.env.CRANE_KERNEL } }, 30000)
  for _, r in pairs(attached or {}) do result.attached = r.result end

  local function diags() return vim.diagnostic.get(bufnr) end
  vim.wait(90000, function() return #diags() > 0 end, 50)
  local d = diags()[1]
  if d == nil then error("no diagnostic arrived") end
  -- the diagnostic as the server sent it (Neovim 0.7 keeps no copy): byte columns back to UTF-16
  local function utf16(lnum, col)
    local text = vim.api.nvim_buf_get_lines(bufnr, lnum, lnum + 1, false)[1] or ""
    local _, units = vim.str_utfindex(text, math.min(col, #text))
    return units
  end
  local lsp = vim.deepcopy((d.user_data and d.user_data.lsp) or {})
  lsp.range = lsp.range or {
      start = { line = d.lnum, character = utf16(d.lnum, d.col) },
      ["end"] = { line = d.end_lnum or d.lnum, character = utf16(d.end_lnum or d.lnum, d.end_col or d.col) },
  }
  lsp.message, lsp.source, lsp.severity = d.message, d.source, d.severity
  lsp.code = lsp.code or d.code
  result.diag = { lnum = d.lnum, col = d.col, message = d.message, code = lsp.code or d.code }

  -- the run guard (editors/neovim/crane_guard.lua), with a REPL stand-in that records what it is sent
  -- and scripted answers to its question: cancel, then run anyway; the first cell runs unasked
  local guard = dofile(vim.env.CRANE_NVIM_GUARD)
  local sent, asked, offered = {}, {}, {}
  local function send(lines) table.insert(sent, table.concat(lines, "\n")) end
  local function answer(choice)
    return function(question, choices)
      table.insert(asked, question); table.insert(offered, choices); return choice
    end
  end
  vim.api.nvim_win_set_cursor(0, { d.lnum + 1, 0 })
  result.guard = { cancelled = guard.run_cell(send, { confirm = answer(3) }) }
  result.guard.anyway = guard.run_cell(send, { confirm = answer(1) })
  vim.api.nvim_win_set_cursor(0, { d.lnum, 0 }) -- the line above the crash, in the same cell
  result.guard.show = guard.run_cell(send, { confirm = answer(2) })
  result.guard.shown_at = vim.api.nvim_win_get_cursor(0)[1] - 1
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  result.guard.first = guard.run_cell(send, { confirm = answer(1) })
  -- run with the fix: the fix is verified in the background after the verdict, so ask until the
  -- verdict carries a verified one; then the guard edits the buffer and sends the edited cell
  local cell_first, cell_last = guard.cell_range(bufnr, d.lnum)
  local function until_verdict(holds) -- asks again every 200 ms, up to 30 s
    local deadline, v = vim.loop.now() + 30000, nil
    repeat
      v = guard.verdict(bufnr, d.lnum, 5000)
      if holds(v) then return true end
      vim.wait(200)
    until vim.loop.now() > deadline
    return false
  end
  result.guard.verified = until_verdict(function(v)
    return guard.blocks(v) and guard.verified_fix(v, cell_last - cell_first + 1) ~= nil
  end)
  vim.api.nvim_win_set_cursor(0, { d.lnum + 1, 0 })
  local original = vim.api.nvim_buf_get_lines(bufnr, d.lnum, d.lnum + 1, false)[1]
  result.guard.with_fix = guard.run_cell(send, { confirm = answer(4) })
  result.guard.with_fix_line = vim.api.nvim_buf_get_lines(bufnr, d.lnum, d.lnum + 1, false)[1]
  vim.cmd("undo") -- one edit: one undo brings the misspelt cell back for the steps below
  result.guard.undone = vim.api.nvim_buf_get_lines(bufnr, d.lnum, d.lnum + 1, false)[1] == original
  result.guard.blocks_again = until_verdict(guard.blocks)
  vim.wait(30000, function() return #diags() > 0 end, 50)
  result.guard.sent, result.guard.asked, result.guard.offered = sent, asked, offered
  local where = { uri = vim.uri_from_bufnr(bufnr) }
  local hover = vim.lsp.buf_request_sync(bufnr, "textDocument/hover",
    { textDocument = where, position = lsp.range.start }, 20000)
  for _, r in pairs(hover or {}) do
    if r.result then result.hover = r.result.contents.value end
  end
  local actions = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction",
    { textDocument = where, range = lsp.range, context = { diagnostics = { lsp } } }, 20000)
  result.actions = {}
  local fix
  for _, r in pairs(actions or {}) do
    for _, a in ipairs(r.result or {}) do
      table.insert(result.actions, a.title)
      if a.edit and fix == nil then fix = a end
    end
  end
  if fix then vim.lsp.util.apply_workspace_edit(fix.edit, client.offset_encoding or "utf-16") end
  vim.wait(90000, function() return #diags() == 0 end, 50)
  result.after = #diags()
  result.line = vim.api.nvim_buf_get_lines(bufnr, d.lnum, d.lnum + 1, false)[1]
  -- fixed: the guard now sends the cell without a question
  local before = #asked
  vim.api.nvim_win_set_cursor(0, { d.lnum + 1, 0 })
  result.guard.fixed = guard.run_cell(send, { confirm = answer(3) })
  result.guard.asked_after_fix = #asked - before
  client.stop()
end

local ok, err = pcall(run)
if not ok then result.error = tostring(err) end
local f = io.open(vim.env.CRANE_NVIM_OUT, "w")
f:write(vim.fn.json_encode(result))
f:close()
vim.cmd("qa!")
