#include <sqlite3.h>

/// sqlite3_db_config is variadic, which Swift cannot call: this sets one of its on/off options.
static inline int rtdb_sqlite3_db_config_flag(sqlite3 *db, int option, int on) {
    return sqlite3_db_config(db, option, on, (int *)0);
}

/// sqlite3_config is variadic too: this turns SQLite's memory statistics off, so that its
/// allocations take no global mutex. Only before the library is initialized (the first open).
static inline int rtdb_sqlite3_config_no_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
