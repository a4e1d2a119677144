// libedit (BSD editline) for Swift, through its native histedit.h API. el_set, el_get and
// history take variable arguments, which Swift cannot call: each use is wrapped here.
#ifndef ANCS_CEDIT_SHIM_H
#define ANCS_CEDIT_SHIM_H

#include <histedit.h>
#include <locale.h>
#include <sys/ioctl.h>
#include <wchar.h>

// An X/Open function the C library declares only under _XOPEN_SOURCE.
extern int wcwidth(wchar_t character);

/// An editor on standard input and output (errors to standard error).
static inline EditLine *ancs_el_init(const char *program) { return el_init(program, stdin, stdout, stderr); }

typedef char *(*ancs_el_prompt_fn)(EditLine *);
typedef unsigned char (*ancs_el_command_fn)(EditLine *, int);

static inline int ancs_el_set_prompt(EditLine *el, ancs_el_prompt_fn prompt) {
  return el_set(el, EL_PROMPT, prompt);
}
static inline int ancs_el_set_editor(EditLine *el, const char *mode) { return el_set(el, EL_EDITOR, mode); }
/// Whether libedit installs its own signal handlers while it reads (off: the program has its own).
static inline int ancs_el_set_signal(EditLine *el, int on) { return el_set(el, EL_SIGNAL, on); }
static inline int ancs_el_set_history(EditLine *el, History *history_state) {
  return el_set(el, EL_HIST, history, history_state);
}
static inline int ancs_el_set_getcfn(EditLine *el, el_rfunc_t read_character) {
  return el_set(el, EL_GETCFN, read_character);
}
static inline int ancs_el_set_clientdata(EditLine *el, void *data) { return el_set(el, EL_CLIENTDATA, data); }
static inline void *ancs_el_clientdata(EditLine *el) {
  void *data = NULL;
  el_get(el, EL_CLIENTDATA, &data);
  return data;
}
/// Adds a named editor command.
static inline int ancs_el_addfn(EditLine *el, const char *name, const char *help, ancs_el_command_fn command) {
  return el_set(el, EL_ADDFN, name, help, command);
}
/// Binds a key (e.g. "^I") to a named editor command (e.g. "em-inc-search-prev").
static inline int ancs_el_bind(EditLine *el, const char *key, const char *command) {
  return el_set(el, EL_BIND, key, command, NULL);
}
/// Puts the terminal in libedit's editing mode (1) or back as it was (0).
static inline int ancs_el_prep_term(EditLine *el, int editing) { return el_set(el, EL_PREP_TERM, editing); }
/// Redraws the prompt and the line from where the cursor is, taking the screen as blank.
static inline int ancs_el_refresh(EditLine *el) { return el_set(el, EL_REFRESH); }

static inline int ancs_history_setsize(History *history_state, int size) {
  HistEvent event;
  return history(history_state, &event, H_SETSIZE, size);
}
/// Whether an entry equal to the newest is left out.
static inline int ancs_history_setunique(History *history_state, int unique) {
  HistEvent event;
  return history(history_state, &event, H_SETUNIQUE, unique);
}
static inline int ancs_history_enter(History *history_state, const char *line) {
  HistEvent event;
  return history(history_state, &event, H_ENTER, line);
}
/// Reads a history file (libedit's format); the number of lines read, -1 when it cannot.
static inline int ancs_history_load(History *history_state, const char *path) {
  HistEvent event;
  return history(history_state, &event, H_LOAD, path);
}
/// Writes the history file; the number of lines written, -1 when it cannot.
static inline int ancs_history_save(History *history_state, const char *path) {
  HistEvent event;
  return history(history_state, &event, H_SAVE, path);
}

/// The terminal's size on `fd`; 0 and 0 when it is not a terminal.
static inline void ancs_terminal_size(int fd, int *rows, int *columns) {
  struct winsize size = {0};
  if (ioctl(fd, TIOCGWINSZ, &size) != 0) {
    size.ws_row = 0;
    size.ws_col = 0;
  }
  *rows = size.ws_row;
  *columns = size.ws_col;
}

#endif
