;;; crane-guard.el --- ask crane-lsp before a # %% cell goes to the kernel -*- lexical-binding: t -*-

;; With eglot running crane-lsp in a `# %%' script, `crane-guard-run-cell' sends the cell around
;; point to your REPL, but first asks the server for the cell's verdict (`crane.cellVerdict'):
;; when its `blockRun' is true (a certain or observed crash for the cell's current text) it asks
;; "Run anyway / Show / Cancel".  No eglot server, no verdict, an error or a slow answer: the
;; cell is sent at once.  When the answer's first fix is verified (it ran clean in the server's
;; dry run from the kernel's state) the question names it and adds "run with the fix": the fix's
;; lines of the cell are replaced in the buffer (one change, `undo' takes it back) and the edited
;; cell is sent.
;;
;;   (load "/path/to/crane-guard.el")
;;   (with-eval-after-load 'python
;;     (define-key python-mode-map (kbd "C-c C-c") #'crane-guard-run-cell))
;;   ;; emacs-jupyter instead of `run-python':
;;   ;; (setq crane-guard-send-function #'jupyter-eval-region)

;;; Code:

(require 'eglot)
(require 'python)

(defvar crane-guard-send-function #'python-shell-send-region
  "Called with the cell's BEG and END to run it (default: the inferior Python of `run-python').")

(defvar crane-guard-ask-function #'crane-guard-ask
  "Called with the question, and t when a verified fix may be run (only a function that takes
a second argument is offered it); returns `run', `show', `fix' or nil (cancel).")

(defvar crane-guard-timeout 1.5
  "Seconds to wait for the verdict before the cell is sent without one.")

(defun crane-guard-cell-bounds ()
  "The current `# %%' cell as (BEG . END), the marker line excluded."
  (save-excursion
    (let* ((marker "^#[ \t]*%%")
           (beg (progn (end-of-line)
                       (if (re-search-backward marker nil t) (line-beginning-position 2) (point-min))))
           (end (progn (goto-char beg)
                       (if (re-search-forward marker nil t) (line-beginning-position) (point-max)))))
      (cons beg end))))

(defun crane-guard-verdict ()
  "The server's verdict (a plist) for the cell at point, or nil."
  (let ((server (ignore-errors (eglot-current-server))))
    (when (and server buffer-file-name)
      (when (fboundp 'eglot--signal-textDocument/didChange)
        (eglot--signal-textDocument/didChange))  ; edits eglot still holds back for its idle timer
      (condition-case nil
          (jsonrpc-request server :workspace/executeCommand
                           (list :command "crane.cellVerdict"
                                 :arguments (vector (list :uri (eglot--path-to-uri buffer-file-name)
                                                          :line (1- (line-number-at-pos)))))
                           :timeout crane-guard-timeout)
        (error nil)))))

(defun crane-guard-blocks (verdict)
  "Whether VERDICT holds the run: a certain or observed crash for this text, not ignored."
  (and (eq (plist-get verdict :blockRun) t)
       (eq (plist-get verdict :crash) t)
       (not (eq (plist-get verdict :stale) t))
       (not (eq (plist-get verdict :ignored) t))
       (member (plist-get verdict :certainty) '("certain" "observed"))))

(defun crane-guard-verified-fix (verdict lines)
  "VERDICT's first fix (verified ones come first) when it ran clean in the dry run and is a
well-formed edit of a cell of LINES lines; else nil."
  (let* ((fixes (plist-get verdict :fixes))
         (fix (and (sequencep fixes) (> (length fixes) 0) (elt fixes 0)))
         (start (plist-get fix :startLine))
         (end (plist-get fix :endLine)))
    (and (eq (plist-get fix :verified) t)
         (stringp (plist-get fix :newText))
         (natnump start) (integerp end) (< start end) (<= end lines)
         fix)))

(defun crane-guard-question (verdict _first &optional fix)
  "The question about VERDICT, in the server's words and the file's line numbers (its
`question'); an older server that sends none gets a plain one.  FIX, a verified fix, is named
after it."
  (let ((asked (plist-get verdict :question)))
    (concat (if (stringp asked)
                asked
              (format "crane: this cell %s. Run anyway?" (or (plist-get verdict :label) "will crash")))
            (if fix (format " Fix: %s (%s)." (plist-get fix :title) (plist-get fix :status)) "")
            " ")))

(defun crane-guard-ask (question &optional with-fix)
  (pcase (car (read-multiple-choice
               question
               (append '((?r "run anyway") (?s "show") (?c "cancel"))
                       (and with-fix '((?f "run with the fix"))))))
    (?r 'run)
    (?s 'show)
    (?f (and with-fix 'fix))))

(defun crane-guard--ask (question fix)
  "Asks QUESTION with `crane-guard-ask-function', offering FIX only to one that takes it."
  (let ((arity (func-arity crane-guard-ask-function)))
    (if (and fix (or (eq (cdr arity) 'many) (>= (cdr arity) 2)))
        (funcall crane-guard-ask-function question t)
      (funcall crane-guard-ask-function question))))

(defun crane-guard-apply-fix (bounds text fix)
  "Replaces FIX's lines of the cell at BOUNDS in one undoable change, when the cell still reads
TEXT; returns the edited cell's bounds, or nil when it changed meanwhile."
  (when (equal (buffer-substring-no-properties (car bounds) (cdr bounds)) text)
    (save-excursion
      (goto-char (car bounds))
      (forward-line (plist-get fix :startLine))
      (let ((beg (point)))
        (forward-line (1- (- (plist-get fix :endLine) (plist-get fix :startLine))))
        (undo-boundary)
        (delete-region beg (line-end-position))
        (goto-char beg)
        (insert (replace-regexp-in-string "\n+\\'" "" (plist-get fix :newText)))
        (undo-boundary))
      (goto-char (car bounds))
      (crane-guard-cell-bounds))))

(defun crane-guard-run-cell ()
  "Send the `# %%' cell at point, asking first when crane knows it will crash.
Returns `ran', `ran-anyway', `ran-with-fix', `shown' or `cancelled'."
  (interactive)
  (let* ((bounds (crane-guard-cell-bounds))
         (first (1- (line-number-at-pos (car bounds))))
         (text (buffer-substring-no-properties (car bounds) (cdr bounds)))
         (verdict (crane-guard-verdict))
         (fix (and (crane-guard-blocks verdict)
                   (crane-guard-verified-fix verdict (count-lines (car bounds) (cdr bounds))))))
    (if (not (crane-guard-blocks verdict))
        (progn (funcall crane-guard-send-function (car bounds) (cdr bounds)) 'ran)
      (pcase (crane-guard--ask (crane-guard-question verdict first fix) fix)
        ('run (funcall crane-guard-send-function (car bounds) (cdr bounds)) 'ran-anyway)
        ('fix
         (let ((edited (and fix (crane-guard-apply-fix bounds text fix))))
           (if (not edited)
               'cancelled
             (funcall crane-guard-send-function (car edited) (cdr edited))
             'ran-with-fix)))
        ('show
         (goto-char (car bounds))
         (forward-line (or (plist-get verdict :line) 0))
         (message "%s" (plist-get verdict :message))
         'shown)
        (_ 'cancelled)))))

(provide 'crane-guard)
;;; crane-guard.el ends here
