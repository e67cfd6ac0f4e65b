-- crane's run guard for Neovim (0.7+): ask crane-lsp before a `# %%` cell goes to the kernel.
--
-- Neovim has no kernel of its own: a REPL plugin (iron.nvim, vim-slime, molten-nvim, jupynium, ...)
-- sends the cell. Put this file on your runtimepath as lua/crane_guard.lua (or `dofile` it) and
-- map a key to `run_cell` with your plugin's send function:
--
--   local guard = require("crane_guard")
--   vim.keymap.set("n", "<leader>r", function()
--     guard.run_cell(function(lines) require("iron.core").send(nil, lines) end)
--   end, { desc = "run the cell, asking crane first" })
--
-- `run_cell` asks the server for the cell's verdict (`crane.cellVerdict`); when its `blockRun` is
-- true (a certain or observed crash for the cell's current text) it asks "Run anyway / Show /
-- Cancel" first. No crane client, no verdict, an error or a slow answer: the cell is sent at once.
-- When the answer's first fix is verified (it ran clean in the server's dry run from the kernel's
-- state) the question names it and a 4th choice, "Run with the fix", replaces the fix's lines of
-- the cell in the buffer (one edit, `u` undoes it) and sends the edited cell.
local M = {}

--- The `# %%` cell around 0-based `line`: its first and last 0-based lines, marker excluded.
function M.cell_range(bufnr, line)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local function marker(i) return lines[i + 1] ~= nil and lines[i + 1]:match("^#%s*%%%%") ~= nil end
  local first, last = line, line
  while first > 0 and not marker(first) do first = first - 1 end
  if marker(first) then first = first + 1 end
  while last + 1 < #lines and not marker(last + 1) do last = last + 1 end
  return math.min(first, last), last
end

local function crane_client(bufnr)
  local clients = (vim.lsp.get_clients or vim.lsp.get_active_clients)()
  for _, client in ipairs(clients) do
    if client.name == "crane" and (client.attached_buffers == nil or client.attached_buffers[bufnr]) then
      return client
    end
  end
end

--- The server's verdict for the cell holding 0-based `line`, or nil (no crane client, no answer).
function M.verdict(bufnr, line, timeout_ms)
  local client = crane_client(bufnr)
  if client == nil then return nil end
  local params = { command = "crane.cellVerdict", arguments = { { uri = vim.uri_from_bufnr(bufnr), line = line } } }
  local reply = client.request_sync("workspace/executeCommand", params, timeout_ms or 1500, bufnr)
  if reply == nil or reply.err ~= nil then return nil end
  return reply.result
end

function M.blocks(v)
  return type(v) == "table" and v.blockRun == true and v.crash == true and v.stale ~= true
    and v.ignored ~= true and (v.certainty == "certain" or v.certainty == "observed")
end

--- The question, in the server's words and the file's line numbers (its `question`); an older
--- server that sends none gets a plain one.
function M.question(v, _first)
  if type(v.question) == "string" then return v.question end  -- the server's words and line numbers
  return "crane: this cell " .. (type(v.label) == "string" and v.label or "will crash") .. ". Run anyway?"
end

--- The fix the guard may run with: the answer's first fix (verified ones come first) when it ran
--- clean in the dry run and is a well-formed edit of the cell's `count` lines; else nil.
function M.verified_fix(v, count)
  local fix = type(v) == "table" and type(v.fixes) == "table" and v.fixes[1] or nil
  if type(fix) ~= "table" or fix.verified ~= true or type(fix.newText) ~= "string" then return nil end
  local s, e = fix.startLine, fix.endLine
  if type(s) ~= "number" or type(e) ~= "number" or s < 0 or e <= s or e > count then return nil end
  return fix
end

--- The fix in words, after the question: " Fix: Use 'amount' (runs clean in a dry run)."
function M.fix_words(fix)
  return " Fix: " .. tostring(fix.title) .. " (" .. tostring(fix.status) .. ")."
end

--- Replaces the fix's lines of the cell that starts at `first` (one edit) when the cell still
--- reads `lines`; false when it changed meanwhile.
local function apply_fix(bufnr, first, last, lines, fix)
  if not vim.deep_equal(vim.api.nvim_buf_get_lines(bufnr, first, last + 1, false), lines) then return false end
  local new = vim.split((fix.newText:gsub("\n+$", "")), "\n", { plain = true })
  vim.api.nvim_buf_set_lines(bufnr, first + fix.startLine, first + fix.endLine, false, new)
  return true
end

--- Sends the cell under the cursor with `send(lines, first, last)`, asking first when crane knows
--- it will crash. `opts.confirm(question, choices, default)` replaces `vim.fn.confirm` (1: run, 2:
--- show, 4: run with the verified fix, offered only when there is one; else cancel). Returns "ran",
--- "ran anyway", "ran with the fix", "shown" or "cancelled".
function M.run_cell(send, opts)
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  local first, last = M.cell_range(bufnr, line)
  local lines = vim.api.nvim_buf_get_lines(bufnr, first, last + 1, false)
  local ok, v = pcall(M.verdict, bufnr, line, opts.timeout_ms)
  if ok and M.blocks(v) then
    local fix = M.verified_fix(v, #lines)
    local question, choices = M.question(v, first), "&Run anyway\n&Show\n&Cancel"
    if fix then question, choices = question .. M.fix_words(fix), choices .. "\nRun with the &fix" end
    local choice = (opts.confirm or vim.fn.confirm)(question, choices, 3)
    if choice == 4 and fix then
      if not apply_fix(bufnr, first, last, lines, fix) then return "cancelled" end
      first, last = M.cell_range(bufnr, first)
      send(vim.api.nvim_buf_get_lines(bufnr, first, last + 1, false), first, last)
      return "ran with the fix"
    elseif choice == 1 then
      send(lines, first, last)
      return "ran anyway"
    elseif choice == 2 then
      local at = first + (type(v.line) == "number" and v.line or 0)
      vim.api.nvim_win_set_cursor(0, { at + 1, 0 })
      vim.diagnostic.open_float({ bufnr = bufnr, scope = "line" })
      return "shown"
    end
    return "cancelled"
  end
  send(lines, first, last)
  return "ran"
end

return M
