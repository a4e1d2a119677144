// ncursesw for Swift, without pkg-config: ncursesw.pc's only flags are -D_DEFAULT_SOURCE
// -D_XOPEN_SOURCE=600, which SwiftPM drops (with a warning). Of those, curses.h needs only
// _XOPEN_SOURCE >= 500, to turn on NCURSES_WIDECHAR, so the wide-character API is switched
// on here directly, and the X/Open functions the C library declares only under
// _XOPEN_SOURCE are declared below. The macros and globals Swift cannot import are wrapped
// in functions.
#ifndef ANCS_CNCURSES_SHIM_H
#define ANCS_CNCURSES_SHIM_H

#define NCURSES_WIDECHAR 1
#ifndef _XOPEN_SOURCE_EXTENDED
#define _XOPEN_SOURCE_EXTENDED 1
#endif
#include <langinfo.h>
#include <locale.h>
#include <ncurses.h>
#include <wchar.h>

// X/Open functions the C library declares only under _XOPEN_SOURCE.
extern int wcwidth(wchar_t character);
extern int wcswidth(const wchar_t *text, size_t count);

/// A screen on standard output, reading standard input (the globals stay in C).
static inline SCREEN *ancs_newterm(void) { return newterm(NULL, stdout, stdin); }
static inline WINDOW *ancs_stdscr(void) { return stdscr; }
static inline int ancs_lines(void) { return LINES; }
static inline int ancs_cols(void) { return COLS; }
static inline void ancs_getmaxyx(WINDOW *window, int *rows, int *cols) {
  int y = 0, x = 0;
  getmaxyx(window, y, x);
  *rows = y;
  *cols = x;
}
static inline attr_t ancs_a_normal(void) { return A_NORMAL; }
static inline attr_t ancs_a_bold(void) { return A_BOLD; }
static inline attr_t ancs_a_dim(void) { return A_DIM; }
static inline attr_t ancs_a_reverse(void) { return A_REVERSE; }
static inline attr_t ancs_a_underline(void) { return A_UNDERLINE; }
static inline attr_t ancs_color_pair(short pair) { return COLOR_PAIR(pair); }
/// Sets the window's attributes and colour pair at once.
static inline int ancs_attrset(WINDOW *window, attr_t attributes, short pair) {
  return wattr_set(window, attributes, pair, NULL);
}

#endif
