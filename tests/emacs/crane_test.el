;;; crane_test.el --- drive crane-lsp from headless Emacs + eglot, as docs/lsp-editors.md configures it -*- lexical-binding: t -*-
;; Run: emacs --batch -l crane_test.el (not -Q: Debian loads elpa-eglot from site-start) ; reads CRANE_EMACS_FILE, CRANE_EMACS_CMD (a JSON list),
;; CRANE_KERNEL, and writes what the editor saw to CRANE_EMACS_OUT as JSON.
(require 'json)
(require 'python)
(require 'eglot)
(require 'flymake)

;; --- the configuration of docs/lsp-editors.md (the command is this test's Python running crane-lsp) ---
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               `(python-mode . (,@(append (json-read-from-string (getenv "CRANE_EMACS_CMD")) nil)
                                :initializationOptions (:debounce 200)))))
;; --- end of the configuration of docs/lsp-editors.md ---

(defvar crane-result (make-hash-table :test 'equal))
(defun crane-put (key value) (puthash key value crane-result))

(defun crane-wait (predicate timeout)
  "Let Emacs run (process output, timers) until PREDICATE holds or TIMEOUT seconds pass."
  (let ((deadline (+ (float-time) timeout)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (funcall predicate)))

(defun crane-diags () (flymake-diagnostics))

(defun crane-run ()
  (find-file (getenv "CRANE_EMACS_FILE"))
  (call-interactively #'eglot)           ; M-x eglot
  (unless (crane-wait (lambda () (eglot-current-server)) 60) (error "eglot did not connect"))
  (let ((server (eglot-current-server)))
    ;; settings pushed later, as docs/lsp-editors.md says
    (setq-default eglot-workspace-configuration '(:crane (:debounce 50)))
    (eglot-signal-didChangeConfiguration server)
    ;; attach the kernel with crane.attachKernel (the reply says whether it worked)
    (crane-put "attached"
               (jsonrpc-request server :workspace/executeCommand
                                (list :command "crane.attachKernel"
                                      :arguments (vector (eglot--path-to-uri (buffer-file-name))
                                                         (getenv "CRANE_KERNEL")))
                                :timeout 30))
    (unless (crane-wait (lambda () (crane-diags)) 90) (error "no diagnostic arrived"))
    (let* ((d (car (crane-diags)))
           (beg (flymake-diagnostic-beg d)))
      (crane-put "line" (1- (line-number-at-pos beg)))  ; 0-based, as LSP counts
      (crane-put "column" (save-excursion (goto-char beg) (- beg (line-beginning-position)))) ; characters
      (crane-put "message" (flymake-diagnostic-text d))
      ;; the run guard (editors/emacs/crane-guard.el), with a REPL stand-in that records the cells it
      ;; is sent and scripted answers: cancel, run anyway, show; the first cell runs unasked
      (load (getenv "CRANE_EMACS_GUARD") nil t)
      (let* ((sent nil) (asked nil) (offered nil) (answers nil) (outcomes nil)
             (crane-guard-send-function
              (lambda (b e) (push (buffer-substring-no-properties b e) sent)))
             (crane-guard-ask-function
              (lambda (question &optional with-fix)
                (push question asked) (push with-fix offered) (pop answers))))
        (dolist (answer '(nil run show))
          (goto-char beg)
          (setq answers (list answer))
          (push (symbol-name (crane-guard-run-cell)) outcomes))
        (crane-put "shown_at" (1- (line-number-at-pos)))
        (goto-char (point-min))
        (forward-line 1)
        (push (symbol-name (crane-guard-run-cell)) outcomes)
        ;; run with the fix: it is verified in the background after the verdict, so ask until the
        ;; verdict carries a verified one; the guard edits the buffer and sends the edited cell
        (goto-char beg)
        (let* ((bounds (crane-guard-cell-bounds))
               (lines (count-lines (car bounds) (cdr bounds)))
               (original (buffer-substring-no-properties (line-beginning-position) (line-end-position))))
          (crane-put "verified"
                     (and (crane-wait (lambda ()
                                        (let ((v (crane-guard-verdict)))
                                          (or (and (crane-guard-blocks v) (crane-guard-verified-fix v lines))
                                              (progn (sleep-for 0.2) nil))))
                                      30)
                          t))
          (setq answers (list 'fix))
          (push (symbol-name (crane-guard-run-cell)) outcomes)
          (crane-put "with_fix_line" (buffer-substring-no-properties (line-beginning-position)
                                                                     (line-end-position)))
          (undo)                        ; one change: one undo brings the misspelt cell back
          (goto-char beg)
          (crane-put "undone" (equal original (buffer-substring-no-properties (line-beginning-position)
                                                                              (line-end-position))))
          (crane-put "blocks_again"
                     (and (crane-wait (lambda () (or (crane-guard-blocks (crane-guard-verdict))
                                                     (progn (sleep-for 0.2) nil)))
                                      30)
                          t))
          (flymake-start)
          (crane-wait (lambda () (crane-diags)) 30))
        (crane-put "guard" (list :outcomes (vconcat (reverse outcomes)) :asked (vconcat (reverse asked))
                                 :offered (vconcat (mapcar (lambda (o) (if o t :json-false))
                                                           (reverse offered)))
                                 :sent (vconcat (reverse sent)))))
      (goto-char beg)
      (let ((hover (jsonrpc-request server :textDocument/hover (eglot--TextDocumentPositionParams)
                                    :timeout 20)))
        (crane-put "hover" (and hover (plist-get (plist-get hover :contents) :value))))
      (let* ((pos (eglot--pos-to-lsp-position beg))
             (actions (jsonrpc-request
                       server :textDocument/codeAction
                       (list :textDocument (eglot--TextDocumentIdentifier)
                             :range (list :start pos :end pos)
                             :context (list :diagnostics
                                            (vector (cdr (assoc 'eglot-lsp-diag (flymake-diagnostic-data d))))))
                       :timeout 20))
             (fix (seq-find (lambda (a) (plist-get a :edit)) actions)))
        (crane-put "actions" (vconcat (mapcar (lambda (a) (plist-get a :title)) actions)))
        (when fix (eglot--apply-workspace-edit (plist-get fix :edit)))
        ;; eglot sends the change from an idle timer, and batch Emacs is never idle: send it now
        (eglot--signal-textDocument/didChange)
        (flymake-start)
        (crane-wait (lambda () (null (crane-diags))) 90)
        (crane-put "after" (length (crane-diags)))
        (crane-put "fixed_line" (buffer-substring-no-properties (line-beginning-position)
                                                                (line-end-position)))))
    (eglot-shutdown server)))

(condition-case err
    (crane-run)
  (error (crane-put "error" (error-message-string err))))
(with-temp-file (getenv "CRANE_EMACS_OUT")
  (insert (json-encode crane-result)))
(kill-emacs 0)
