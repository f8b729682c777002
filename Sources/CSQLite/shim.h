#include <sqlite3.h>

/// sqlite3_db_config is variadic, which Swift cannot call: this sets one of its on/off options.
static inline int rtdb_sqlite3_db_config_flag(sqlite3 *db, int option, int on) {
    return sqlite3_db_config(db, option, on, (int *)0);
}
