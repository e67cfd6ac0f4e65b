;;; crane-guard.el --- ask crane-lsp before a # %% cell goes to the kernel -*- lexical-binding: t -*-

;; With eglot running crane-lsp in a `# %%' script, `crane-guard-run-cell' sends the cell around
;; point to your REPL, but first asks the server for the cell's verdict (`crane.cellVerdict'):
;; when its `blockRun' is true (a certain or observed crash for the cell's current text) it asks
;; "Run anyway / Show / Cancel".  No eglot server, no verdict, an error or a slow answer: the
;; cell is sent at once.
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
  "Called with the question; returns `run', `show' or nil (cancel).")

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

(defun crane-guard-question (verdict _first)
  "The question about VERDICT, in the server's words and the file's line numbers (its
`question'); an older server that sends none gets a plain one."
  (let ((asked (plist-get verdict :question)))
    (concat (if (stringp asked)
                asked
              (format "crane: this cell %s. Run anyway?" (or (plist-get verdict :label) "will crash")))
            " ")))

(defun crane-guard-ask (question)
  (pcase (car (read-multiple-choice question '((?r "run anyway") (?s "show") (?c "cancel"))))
    (?r 'run)
    (?s 'show)))

(defun crane-guard-run-cell ()
  "Send the `# %%' cell at point, asking first when crane knows it will crash.
Returns `ran', `ran-anyway', `shown' or `cancelled'."
  (interactive)
  (let* ((bounds (crane-guard-cell-bounds))
         (first (1- (line-number-at-pos (car bounds))))
         (verdict (crane-guard-verdict)))
    (if (not (crane-guard-blocks verdict))
        (progn (funcall crane-guard-send-function (car bounds) (cdr bounds)) 'ran)
      (pcase (funcall crane-guard-ask-function (crane-guard-question verdict first))
        ('run (funcall crane-guard-send-function (car bounds) (cdr bounds)) 'ran-anyway)
        ('show
         (goto-char (car bounds))
         (forward-line (or (plist-get verdict :line) 0))
         (message "%s" (plist-get verdict :message))
         'shown)
        (_ 'cancelled)))))

(provide 'crane-guard)
;;; crane-guard.el ends here
