// The AT-SPI2 reader over GDBus. Two routes to an application's nodes:
//  - GTK (atk-bridge) answers org.a11y.atspi.Cache.GetItems with every object, its role, name, states and interfaces
//    in one reply, once some assistive technology has registered for events (we register one for the dump);
//  - everything else (Qt answers GetItems with nothing) is walked breadth-first, every call of a level in flight at
//    once, so a level costs one round trip instead of one per node.
// Extents (SCREEN coordinates), values and action names are then fetched for the kept nodes, again all in flight.
// libatspi is used only for its role and state tables; `atspi_init` is never called.
#include "xclaw_atspi.h"

#include <gio/gio.h>
#include <atspi/atspi-constants.h>
#include <atspi/atspi-enum-types.h>
#include <dbus/dbus.h>
#include <atspi/atspi-types.h>
#include <atspi/atspi-misc.h>
#include <errno.h>
#include <glib-unix.h>
#include <limits.h>
#include <unistd.h>
#include <string.h>

enum { IF_COMPONENT = 1, IF_ACTION = 2, IF_TEXT = 4, IF_VALUE = 8, IF_EDITABLE = 16 };
enum { MAX_NODES_PER_APP = 5000, MAX_CHILDREN = 500, MAX_VALUE = 200 };

typedef struct node {
  int id, parent, app;
  char *bus, *path;
  guint role;
  char *name, *description;
  guint32 states[2];
  int interfaces;
  int x, y, w, h;
  gboolean has_extents;
  char *value;
  GPtrArray *actions;  // char*
  GArray *children;    // int ids, in order
  int index_in_parent;
  int kept;            // -1 unknown, 0 dropped, 1 kept
  gboolean queried;    // its role, name and states were asked for (a walk cut at its cap leaves some unasked)
  int characters;      // Text.CharacterCount, -1 unknown
} node;

typedef struct app {
  int root;  // node id
  char *bus;
  int pid;
  const char *route;
  int count;
  gboolean responded;  // answered its name: worth walking (a hung app is skipped, not waited on per level)
} app;

struct xa_reader {
  GDBusConnection *conn;
  GMainContext *ctx;
  int timeout_ms;
  int pending;
  GPtrArray *nodes;  // node*
  GPtrArray *apps;   // app*
};

static void set_error(char **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void set_error(char **error, const char *fmt, ...) {
  if (!error) return;
  va_list ap;
  va_start(ap, fmt);
  g_free(*error);
  *error = g_strdup_vprintf(fmt, ap);
  va_end(ap);
}

void xa_free(char *s) { g_free(s); }

static gboolean has_state(const node *n, int state) {
  return (n->states[state / 32] >> (state % 32)) & 1;
}

static node *node_new(xa_reader *r, const char *bus, const char *path, int parent, int app) {
  node *n = g_new0(node, 1);
  n->id = (int)r->nodes->len;
  n->parent = parent;
  n->app = app;
  n->bus = g_strdup(bus);
  n->path = g_strdup(path);
  n->children = g_array_new(FALSE, FALSE, sizeof(int));
  n->index_in_parent = -1;
  n->kept = -1;
  n->characters = -1;
  g_ptr_array_add(r->nodes, n);
  return n;
}

static void node_free(gpointer p) {
  node *n = p;
  g_free(n->bus);
  g_free(n->path);
  g_free(n->name);
  g_free(n->description);
  g_free(n->value);
  if (n->actions) g_ptr_array_free(n->actions, TRUE);
  g_array_free(n->children, TRUE);
  g_free(n);
}

static void app_free(gpointer p) {
  app *a = p;
  g_free(a->bus);
  g_free(a);
}

static node *N(xa_reader *r, int id) { return g_ptr_array_index(r->nodes, id); }

// ---------------------------------------------------------------------------------------------------------------
// Connections

static GDBusConnection *connect_bus(const char *address, char **error) {
  GError *err = NULL;
  GDBusConnection *conn = g_dbus_connection_new_for_address_sync(
      address, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, NULL,
      NULL, &err);
  if (!conn) {
    set_error(error, "cannot connect to the bus at %s: %s", address, err ? err->message : "unknown error");
    g_clear_error(&err);
  }
  return conn;
}

static GVariant *call_sync(GDBusConnection *conn, const char *dest, const char *path, const char *iface,
                           const char *method, GVariant *params, const char *reply, int timeout_ms, char **error) {
  GError *err = NULL;
  GVariant *result = g_dbus_connection_call_sync(conn, dest, path, iface, method, params,
                                                 reply ? G_VARIANT_TYPE(reply) : NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START,
                                                 timeout_ms, NULL, &err);
  if (!result) {
    set_error(error, "%s.%s on %s %s failed: %s", iface, method, dest, path, err ? err->message : "unknown error");
    g_clear_error(&err);
  }
  return result;
}

char *xa_session_a11y_address(const char *session, int timeout_ms, char **error) {
  GDBusConnection *conn = connect_bus(session, error);
  if (!conn) return NULL;
  char *address = NULL;
  GVariant *owned = call_sync(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                              "NameHasOwner", g_variant_new("(s)", "org.a11y.Bus"), "(b)", timeout_ms, error);
  if (owned) {
    gboolean has = FALSE;
    g_variant_get(owned, "(b)", &has);
    g_variant_unref(owned);
    if (!has) {
      set_error(error, "the session bus has no accessibility bus (nothing owns org.a11y.Bus)");
    } else {
      GVariant *reply = call_sync(conn, "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress", NULL, "(s)",
                                  timeout_ms, error);
      if (reply) {
        g_variant_get(reply, "(s)", &address);
        g_variant_unref(reply);
      }
    }
  }
  g_dbus_connection_close_sync(conn, NULL, NULL);
  g_object_unref(conn);
  return address;
}

xa_reader *xa_open(const char *address, int timeout_ms, char **error) {
  GMainContext *ctx = g_main_context_new();
  // Replies to the calls below are dispatched in the context that is thread-default when they are made.
  g_main_context_push_thread_default(ctx);
  GDBusConnection *conn = connect_bus(address, error);
  if (!conn) {
    g_main_context_pop_thread_default(ctx);
    g_main_context_unref(ctx);
    return NULL;
  }
  xa_reader *r = g_new0(xa_reader, 1);
  r->conn = conn;
  r->ctx = ctx;
  r->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
  r->nodes = g_ptr_array_new_with_free_func(node_free);
  r->apps = g_ptr_array_new_with_free_func(app_free);
  return r;
}

void xa_close(xa_reader *r) {
  if (!r) return;
  while (r->pending > 0) g_main_context_iteration(r->ctx, TRUE);
  g_dbus_connection_close_sync(r->conn, NULL, NULL);
  g_object_unref(r->conn);
  g_ptr_array_free(r->nodes, TRUE);
  g_ptr_array_free(r->apps, TRUE);
  g_main_context_pop_thread_default(r->ctx);
  g_main_context_unref(r->ctx);
  g_free(r);
}

// ---------------------------------------------------------------------------------------------------------------
// Calls in flight

typedef enum {
  K_PID, K_APP_NAME, K_ITEMS, K_CHILDREN, K_ROLE, K_STATE, K_NAME, K_INTERFACES, K_EXTENTS, K_TEXT, K_VALUE,
  K_ACTIONS, K_CHARACTERS
} kind;

typedef struct pending_call {
  xa_reader *reader;
  kind kind;
  int id;  // node id, or app index for K_PID/K_ITEMS
} pending_call;

static void on_reply(GObject *source, GAsyncResult *res, gpointer data);

static void send_call(xa_reader *r, kind k, int id, const char *dest, const char *path, const char *iface,
                      const char *method, GVariant *params) {
  pending_call *c = g_new(pending_call, 1);
  c->reader = r;
  c->kind = k;
  c->id = id;
  r->pending++;
  g_dbus_connection_call(r->conn, dest, path, iface, method, params, NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START,
                         r->timeout_ms, NULL, on_reply, c);
}

static void wait_all(xa_reader *r) {
  while (r->pending > 0) g_main_context_iteration(r->ctx, TRUE);
}

static int interface_bits(GVariantIter *iter) {
  int bits = 0;
  const char *name;
  while (g_variant_iter_loop(iter, "&s", &name)) {
    if (!strcmp(name, "org.a11y.atspi.Component")) bits |= IF_COMPONENT;
    else if (!strcmp(name, "org.a11y.atspi.Action")) bits |= IF_ACTION;
    else if (!strcmp(name, "org.a11y.atspi.Text")) bits |= IF_TEXT;
    else if (!strcmp(name, "org.a11y.atspi.Value")) bits |= IF_VALUE;
    else if (!strcmp(name, "org.a11y.atspi.EditableText")) bits |= IF_EDITABLE;
  }
  return bits;
}

static void read_states(node *n, GVariantIter *iter) {
  guint32 word;
  int i = 0;
  while (g_variant_iter_next(iter, "u", &word)) {
    if (i < 2) n->states[i] = word;
    i++;
  }
}

static void add_items(xa_reader *r, int app_index, GVariant *items);

static void on_reply(GObject *source, GAsyncResult *res, gpointer data) {
  pending_call *c = data;
  xa_reader *r = c->reader;
  GError *err = NULL;
  GVariant *v = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, &err);
  r->pending--;
  // An application that answers, even with an error, is alive and worth walking; only a timeout means it hangs.
  if (c->kind == K_APP_NAME && (v || !g_error_matches(err, G_IO_ERROR, G_IO_ERROR_TIMED_OUT)))
    ((app *)g_ptr_array_index(r->apps, N(r, c->id)->app))->responded = TRUE;
  g_clear_error(&err);
  if (!v) {  // a node that vanished or an app that does not answer keeps its defaults
    g_free(c);
    return;
  }
  const char *type = g_variant_get_type_string(v);
  node *n = (c->kind == K_PID || c->kind == K_ITEMS) ? NULL : N(r, c->id);
  switch (c->kind) {
    case K_PID:
      if (!strcmp(type, "(u)")) {
        guint32 pid;
        g_variant_get(v, "(u)", &pid);
        ((app *)g_ptr_array_index(r->apps, c->id))->pid = (int)pid;
      }
      break;
    case K_ITEMS:
      if (!strcmp(type, "(a((so)(so)(so)iiassusau))")) add_items(r, c->id, v);
      break;
    case K_APP_NAME:
    case K_NAME:
      if (!strcmp(type, "(v)")) {
        GVariant *inner;
        g_variant_get(v, "(v)", &inner);
        if (g_variant_is_of_type(inner, G_VARIANT_TYPE_STRING)) {
          g_free(n->name);
          n->name = g_variant_dup_string(inner, NULL);
        }
        g_variant_unref(inner);
      }
      break;
    case K_CHILDREN:
      if (!strcmp(type, "(a(so))")) {
        GVariantIter *iter;
        const char *bus, *path;
        g_variant_get(v, "(a(so))", &iter);
        int index = 0;
        while (g_variant_iter_loop(iter, "(&s&o)", &bus, &path)) {
          if (index >= MAX_CHILDREN) continue;
          // A null reference ends some Qt lists.
          if (!strcmp(path, "/org/a11y/atspi/null")) continue;
          node *child = node_new(r, bus, path, n->id, n->app);
          n = N(r, c->id);  // the array may have moved
          child->index_in_parent = index++;
          g_array_append_val(n->children, child->id);
        }
        g_variant_iter_free(iter);
      }
      break;
    case K_ROLE:
      if (!strcmp(type, "(u)")) g_variant_get(v, "(u)", &n->role);
      break;
    case K_STATE:
      if (!strcmp(type, "(au)")) {
        GVariantIter *iter;
        g_variant_get(v, "(au)", &iter);
        read_states(n, iter);
        g_variant_iter_free(iter);
      }
      break;
    case K_INTERFACES:
      if (!strcmp(type, "(as)")) {
        GVariantIter *iter;
        g_variant_get(v, "(as)", &iter);
        n->interfaces = interface_bits(iter);
        g_variant_iter_free(iter);
      }
      break;
    case K_EXTENTS:
      if (!strcmp(type, "((iiii))")) {
        g_variant_get(v, "((iiii))", &n->x, &n->y, &n->w, &n->h);
        n->has_extents = TRUE;
      }
      break;
    case K_TEXT:
      if (!strcmp(type, "(s)")) {
        const char *text;
        g_variant_get(v, "(&s)", &text);
        g_free(n->value);
        // The first MAX_VALUE characters (a document's text is read by OCR where it shows).
        n->value = g_utf8_validate(text, -1, NULL) && g_utf8_strlen(text, -1) > MAX_VALUE
                       ? g_utf8_substring(text, 0, MAX_VALUE)
                       : g_strdup(text);
      }
      break;
    case K_VALUE:
      if (!strcmp(type, "(v)")) {
        GVariant *inner;
        g_variant_get(v, "(v)", &inner);
        if (g_variant_is_of_type(inner, G_VARIANT_TYPE_DOUBLE)) {
          g_free(n->value);
          n->value = g_strdup_printf("%g", g_variant_get_double(inner));
        }
        g_variant_unref(inner);
      }
      break;
    case K_CHARACTERS:
      if (!strcmp(type, "(v)")) {
        GVariant *inner;
        g_variant_get(v, "(v)", &inner);
        if (g_variant_is_of_type(inner, G_VARIANT_TYPE_INT32)) n->characters = g_variant_get_int32(inner);
        g_variant_unref(inner);
      }
      break;
    case K_ACTIONS:
      if (!strcmp(type, "(a(sss))")) {
        GVariantIter *iter;
        const char *name, *desc, *keys;
        g_variant_get(v, "(a(sss))", &iter);
        if (!n->actions) n->actions = g_ptr_array_new_with_free_func(g_free);
        while (g_variant_iter_loop(iter, "(&s&s&s)", &name, &desc, &keys)) g_ptr_array_add(n->actions, g_strdup(name));
        g_variant_iter_free(iter);
      }
      break;
  }
  g_variant_unref(v);
  g_free(c);
}

// ---------------------------------------------------------------------------------------------------------------
// The cache route

static char *key(const char *bus, const char *path) { return g_strconcat(bus, " ", path, NULL); }

static void add_items(xa_reader *r, int app_index, GVariant *items) {
  app *a = g_ptr_array_index(r->apps, app_index);
  GVariantIter *iter;
  g_variant_get(items, "(a((so)(so)(so)iiassusau))", &iter);
  GHashTable *ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  node *root = N(r, a->root);
  g_hash_table_insert(ids, key(root->bus, root->path), GINT_TO_POINTER(root->id + 1));
  GHashTable *parents = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  const char *bus, *path, *app_bus, *app_path, *parent_bus, *parent_path, *name, *description;
  gint32 index, child_count;
  GVariantIter *interfaces, *states;
  guint32 role;
  int count = 0;
  while (g_variant_iter_loop(iter, "((&s&o)(&s&o)(&s&o)iias&su&sau)", &bus, &path, &app_bus, &app_path, &parent_bus,
                             &parent_path, &index, &child_count, &interfaces, &name, &role, &description, &states)) {
    node *n;
    if (!strcmp(path, root->path) && !strcmp(bus, root->bus)) {
      n = root;
    } else {
      if (count >= MAX_NODES_PER_APP) continue;
      n = node_new(r, bus, path, -1, app_index);
      root = N(r, a->root);
      g_hash_table_insert(ids, key(bus, path), GINT_TO_POINTER(n->id + 1));
      g_hash_table_insert(parents, GINT_TO_POINTER(n->id + 1), key(parent_bus, parent_path));
      count++;
    }
    n->index_in_parent = index;
    n->queried = TRUE;
    n->role = role;
    g_free(n->name);
    n->name = g_strdup(name);
    g_free(n->description);
    n->description = g_strdup(description);
    n->interfaces = interface_bits(interfaces);
    read_states(n, states);
  }
  g_variant_iter_free(iter);
  // Link parents now that every node has an id; children in their parent's order.
  GHashTableIter it;
  gpointer id_plus_one, parent_key;
  g_hash_table_iter_init(&it, parents);
  while (g_hash_table_iter_next(&it, &id_plus_one, &parent_key)) {
    node *n = N(r, GPOINTER_TO_INT(id_plus_one) - 1);
    int parent = GPOINTER_TO_INT(g_hash_table_lookup(ids, parent_key)) - 1;
    n->parent = parent;  // -1: an orphan, dropped below
    if (parent >= 0) g_array_append_val(N(r, parent)->children, n->id);
  }
  g_hash_table_destroy(parents);
  g_hash_table_destroy(ids);
  a->route = "cache";
  a->count = count;
}

static gint by_index(gconstpointer pa, gconstpointer pb, gpointer data) {
  xa_reader *r = data;
  int a = *(const int *)pa, b = *(const int *)pb;
  return N(r, a)->index_in_parent - N(r, b)->index_in_parent;
}

// ---------------------------------------------------------------------------------------------------------------
// The walk route

static void ask_node(xa_reader *r, node *n) {
  n->queried = TRUE;
  int id = n->id;
  const char *bus = n->bus, *path = n->path;
  send_call(r, K_CHILDREN, id, bus, path, "org.a11y.atspi.Accessible", "GetChildren", NULL);
  send_call(r, K_ROLE, id, bus, path, "org.a11y.atspi.Accessible", "GetRole", NULL);
  send_call(r, K_STATE, id, bus, path, "org.a11y.atspi.Accessible", "GetState", NULL);
  send_call(r, K_INTERFACES, id, bus, path, "org.a11y.atspi.Accessible", "GetInterfaces", NULL);
  send_call(r, K_NAME, id, bus, path, "org.freedesktop.DBus.Properties", "Get",
            g_variant_new("(ss)", "org.a11y.atspi.Accessible", "Name"));
}

static gboolean worth_descending(const node *n, int flags, gboolean is_root) {
  if (is_root || (flags & XA_ALL)) return TRUE;
  return has_state(n, ATSPI_STATE_SHOWING) && has_state(n, ATSPI_STATE_VISIBLE);
}

static void walk(xa_reader *r, int app_index, int flags) {
  app *a = g_ptr_array_index(r->apps, app_index);
  GArray *level = g_array_new(FALSE, FALSE, sizeof(int));
  g_array_append_val(level, a->root);
  // The root's own name is already asked for; its role and the rest come with the first level.
  int count = 0;
  while (level->len > 0 && count < MAX_NODES_PER_APP) {
    for (guint i = 0; i < level->len; i++) ask_node(r, N(r, g_array_index(level, int, i)));
    wait_all(r);
    GArray *next = g_array_new(FALSE, FALSE, sizeof(int));
    for (guint i = 0; i < level->len; i++) {
      node *n = N(r, g_array_index(level, int, i));
      if (!worth_descending(n, flags, n->id == a->root)) continue;
      for (guint j = 0; j < n->children->len && count < MAX_NODES_PER_APP; j++, count++)
        g_array_append_val(next, g_array_index(n->children, int, j));
    }
    g_array_free(level, TRUE);
    level = next;
  }
  g_array_free(level, TRUE);
  a->route = "walk";
  a->count = count;
}

// ---------------------------------------------------------------------------------------------------------------
// Which nodes to keep, their details, the JSON

static int kept(xa_reader *r, node *n, int flags) {
  if (n->kept >= 0) return n->kept;
  app *a = g_ptr_array_index(r->apps, n->app);
  if (n->id == a->root) return n->kept = 1;
  if (n->parent < 0 || !n->queried) return n->kept = 0;
  n->kept = 0;  // until the parent is known: a parent loop from a broken application ends here, not in the stack
  if (flags & XA_ALL) return n->kept = kept(r, N(r, n->parent), flags);
  n->kept = has_state(n, ATSPI_STATE_SHOWING) && has_state(n, ATSPI_STATE_VISIBLE) && !has_state(n, ATSPI_STATE_DEFUNCT)
            && kept(r, N(r, n->parent), flags);
  return n->kept;
}

static gboolean wants_text(const node *n) {
  switch (n->role) {
    case ATSPI_ROLE_ENTRY: case ATSPI_ROLE_TEXT: case ATSPI_ROLE_SPIN_BUTTON: case ATSPI_ROLE_EDITBAR:
    case ATSPI_ROLE_COMBO_BOX: case ATSPI_ROLE_DOCUMENT_TEXT: case ATSPI_ROLE_TERMINAL:
      return TRUE;
    default:
      return has_state(n, ATSPI_STATE_EDITABLE);
  }
}

static void ask_details(xa_reader *r, int flags) {
  for (guint i = 0; i < r->nodes->len; i++) {
    node *n = N(r, (int)i);
    if (!kept(r, n, flags)) continue;
    int id = n->id;
    if (n->interfaces & IF_COMPONENT)
      send_call(r, K_EXTENTS, id, n->bus, n->path, "org.a11y.atspi.Component", "GetExtents", g_variant_new("(u)", 0));
    // Never read what a password field holds. The length first: only the start of a long text crosses the bus.
    if ((n->interfaces & IF_TEXT) && n->role != ATSPI_ROLE_PASSWORD_TEXT && wants_text(n))
      send_call(r, K_CHARACTERS, id, n->bus, n->path, "org.freedesktop.DBus.Properties", "Get",
                g_variant_new("(ss)", "org.a11y.atspi.Text", "CharacterCount"));
    else if (n->interfaces & IF_VALUE)
      send_call(r, K_VALUE, id, n->bus, n->path, "org.freedesktop.DBus.Properties", "Get",
                g_variant_new("(ss)", "org.a11y.atspi.Value", "CurrentValue"));
    if ((flags & XA_ACTIONS) && (n->interfaces & IF_ACTION))
      send_call(r, K_ACTIONS, id, n->bus, n->path, "org.a11y.atspi.Action", "GetActions", NULL);
  }
  wait_all(r);
  for (guint i = 0; i < r->nodes->len; i++) {
    node *n = N(r, (int)i);
    if (n->characters < 0 || n->kept != 1) continue;
    if (n->characters == 0) {
      n->value = g_strdup("");
      continue;
    }
    // An end past the text gets nothing from Qt, so it is the text's own length when that is shorter.
    int end = n->characters < MAX_VALUE ? n->characters : MAX_VALUE;
    send_call(r, K_TEXT, n->id, n->bus, n->path, "org.a11y.atspi.Text", "GetText", g_variant_new("(ii)", 0, end));
  }
  wait_all(r);
}

static void json_string(GString *out, const char *s) {
  g_string_append_c(out, '"');
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
      case '"': g_string_append(out, "\\\""); break;
      case '\\': g_string_append(out, "\\\\"); break;
      case '\n': g_string_append(out, "\\n"); break;
      case '\r': g_string_append(out, "\\r"); break;
      case '\t': g_string_append(out, "\\t"); break;
      default:
        if (*p < 0x20) g_string_append_printf(out, "\\u%04x", *p);
        else g_string_append_c(out, (char)*p);
    }
  }
  g_string_append_c(out, '"');
}

static GEnumClass *state_class(void) {
  static GEnumClass *cls = NULL;
  if (!cls) cls = g_type_class_ref(atspi_state_type_get_type());
  return cls;
}

static void json_node(xa_reader *r, GString *out, node *n, int *first) {
  if (!*first) g_string_append(out, ",\n");
  *first = 0;
  char *role = atspi_role_get_name((AtspiRole)n->role);
  g_string_append_printf(out, "{\"id\":%d,\"parent\":%d,\"app\":%d,\"bus\":", n->id, n->parent, n->app);
  json_string(out, n->bus);
  g_string_append(out, ",\"path\":");
  json_string(out, n->path);
  g_string_append(out, ",\"role\":");
  json_string(out, role ? role : "unknown");
  g_free(role);
  g_string_append(out, ",\"name\":");
  json_string(out, n->name);
  if (n->description && *n->description) {
    g_string_append(out, ",\"description\":");
    json_string(out, n->description);
  }
  g_string_append(out, ",\"states\":[");
  int any = 0;
  for (int s = 1; s < 64; s++) {
    if (!has_state(n, s)) continue;
    GEnumValue *value = g_enum_get_value(state_class(), s);
    if (!value) continue;
    if (any++) g_string_append_c(out, ',');
    json_string(out, value->value_nick);
  }
  g_string_append_c(out, ']');
  if (n->has_extents) g_string_append_printf(out, ",\"x\":%d,\"y\":%d,\"w\":%d,\"h\":%d", n->x, n->y, n->w, n->h);
  if (n->value) {
    g_string_append(out, ",\"value\":");
    json_string(out, n->value);
  }
  if (n->actions) {
    g_string_append(out, ",\"actions\":[");
    for (guint i = 0; i < n->actions->len; i++) {
      if (i) g_string_append_c(out, ',');
      json_string(out, g_ptr_array_index(n->actions, i));
    }
    g_string_append_c(out, ']');
  }
  if (n->interfaces & IF_EDITABLE) g_string_append(out, ",\"editable\":true");
  g_string_append_printf(out, ",\"children\":%u}", n->children->len);
}

static void json_subtree(xa_reader *r, GString *out, int id, int flags, int *first) {
  node *n = N(r, id);
  if (!kept(r, n, flags)) return;
  json_node(r, out, n, first);
  g_array_sort_with_data(n->children, by_index, r);
  for (guint i = 0; i < n->children->len; i++) json_subtree(r, out, g_array_index(n->children, int, i), flags, first);
}

char *xa_dump(xa_reader *r, int flags, int pid, char **error) {
  gint64 start = g_get_monotonic_time();
  GVariant *reply = call_sync(r->conn, "org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root",
                              "org.a11y.atspi.Accessible", "GetChildren", NULL, "(a(so))", r->timeout_ms, error);
  if (!reply) return NULL;
  // GTK keeps its bulk cache only while an assistive technology listens for events; listening while we read turns
  // it on (the registry forgets the listener when this connection closes).
  if (!(flags & XA_WALK)) {
    GVariant *ok = call_sync(r->conn, "org.a11y.atspi.Registry", "/org/a11y/atspi/registry", "org.a11y.atspi.Registry",
                             "RegisterEvent", g_variant_new("(sass)", "object:children-changed", NULL, ""), NULL,
                             r->timeout_ms, NULL);
    if (ok) g_variant_unref(ok);
  }
  GVariantIter *iter;
  const char *bus, *path;
  g_variant_get(reply, "(a(so))", &iter);
  while (g_variant_iter_loop(iter, "(&s&o)", &bus, &path)) {
    app *a = g_new0(app, 1);
    a->bus = g_strdup(bus);
    a->route = "none";
    int index = (int)r->apps->len;
    g_ptr_array_add(r->apps, a);
    a->root = node_new(r, bus, path, -1, index)->id;
  }
  g_variant_iter_free(iter);
  g_variant_unref(reply);

  // One round for every application's pid, name and (unless only one process is wanted) bulk cache, so an
  // application that does not answer costs one call timeout, not one per step.
  for (guint i = 0; i < r->apps->len; i++) {
    app *a = g_ptr_array_index(r->apps, i);
    node *root = N(r, a->root);
    send_call(r, K_PID, (int)i, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
              "GetConnectionUnixProcessID", g_variant_new("(s)", a->bus));
    send_call(r, K_APP_NAME, root->id, root->bus, root->path, "org.freedesktop.DBus.Properties", "Get",
              g_variant_new("(ss)", "org.a11y.atspi.Accessible", "Name"));
    if (!(flags & XA_WALK) && pid <= 0)
      send_call(r, K_ITEMS, (int)i, a->bus, "/org/a11y/atspi/cache", "org.a11y.atspi.Cache", "GetItems", NULL);
  }
  wait_all(r);
  if (!(flags & XA_WALK) && pid > 0) {
    for (guint i = 0; i < r->apps->len; i++) {
      app *a = g_ptr_array_index(r->apps, i);
      if (a->pid == pid && a->responded)
        send_call(r, K_ITEMS, (int)i, a->bus, "/org/a11y/atspi/cache", "org.a11y.atspi.Cache", "GetItems", NULL);
    }
    wait_all(r);
  }
  for (guint i = 0; i < r->apps->len; i++) {
    app *a = g_ptr_array_index(r->apps, i);
    if (pid > 0 && a->pid != pid) continue;
    if (a->count == 0 && a->responded) walk(r, (int)i, flags);
    if (a->count == 0 && !a->responded) a->route = "unresponsive";
  }
  for (guint i = 0; i < r->apps->len; i++) {
    app *a = g_ptr_array_index(r->apps, i);
    if (pid > 0 && a->pid != pid) N(r, a->root)->kept = 0;
  }
  ask_details(r, flags);

  GString *out = g_string_new("{\"apps\":[");
  int first = 1;
  for (guint i = 0; i < r->apps->len; i++) {
    app *a = g_ptr_array_index(r->apps, i);
    if (pid > 0 && a->pid != pid) continue;
    if (!first) g_string_append_c(out, ',');
    first = 0;
    g_string_append_printf(out, "{\"id\":%u,\"root\":%d,\"bus\":", i, a->root);
    json_string(out, a->bus);
    g_string_append(out, ",\"name\":");
    json_string(out, N(r, a->root)->name);
    g_string_append_printf(out, ",\"pid\":%d,\"route\":\"%s\",\"nodes\":%d}", a->pid, a->route, a->count);
  }
  g_string_append(out, "],\n\"nodes\":[\n");
  first = 1;
  for (guint i = 0; i < r->apps->len; i++) {
    app *a = g_ptr_array_index(r->apps, i);
    if (pid > 0 && a->pid != pid) continue;
    json_subtree(r, out, a->root, flags, &first);
  }
  g_string_append_printf(out, "],\n\"ms\":%.2f}\n", (double)(g_get_monotonic_time() - start) / 1000.0);
  return g_string_free(out, FALSE);
}

// ---------------------------------------------------------------------------------------------------------------
// Acting

char *xa_do_action(xa_reader *r, const char *bus, const char *path, const char *name, char **error) {
  GVariant *reply = call_sync(r->conn, bus, path, "org.a11y.atspi.Action", "GetActions", NULL, "(a(sss))",
                              r->timeout_ms, error);
  if (!reply) return NULL;
  GVariantIter *iter;
  const char *action, *desc, *keys;
  int index = 0, chosen = -1;
  char *chosen_name = NULL;
  GString *names = g_string_new("");
  g_variant_get(reply, "(a(sss))", &iter);
  while (g_variant_iter_loop(iter, "(&s&s&s)", &action, &desc, &keys)) {
    if (names->len) g_string_append(names, ", ");
    g_string_append(names, action);
    if (chosen < 0 && (!name || !*name || !g_ascii_strcasecmp(action, name))) {
      chosen = index;
      chosen_name = g_strdup(action);
    }
    index++;
  }
  g_variant_iter_free(iter);
  g_variant_unref(reply);
  if (chosen < 0) {
    if (index == 0) set_error(error, "the element has no actions");
    else set_error(error, "the element has no action \"%s\" (it has: %s)", name, names->str);
    g_string_free(names, TRUE);
    return NULL;
  }
  g_string_free(names, TRUE);
  reply = call_sync(r->conn, bus, path, "org.a11y.atspi.Action", "DoAction", g_variant_new("(i)", chosen), "(b)",
                    r->timeout_ms, error);
  if (!reply) {
    g_free(chosen_name);
    return NULL;
  }
  gboolean done = FALSE;
  g_variant_get(reply, "(b)", &done);
  g_variant_unref(reply);
  if (!done) {
    set_error(error, "the application refused the action \"%s\"", chosen_name);
    g_free(chosen_name);
    return NULL;
  }
  return chosen_name;
}

int xa_grab_focus(xa_reader *r, const char *bus, const char *path, char **error) {
  GVariant *reply = call_sync(r->conn, bus, path, "org.a11y.atspi.Component", "GrabFocus", NULL, "(b)", r->timeout_ms,
                              error);
  if (!reply) return -1;
  gboolean done = FALSE;
  g_variant_get(reply, "(b)", &done);
  g_variant_unref(reply);
  if (!done) {
    set_error(error, "the application refused to move the focus there");
    return -1;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// Watching

typedef struct watch {
  xa_reader *r;
  int out_fd;
  guint64 events;
  int status;  // -1 running, else the exit status
  GString *line;
} watch;

static void counted(GDBusConnection *conn, const char *sender, const char *path, const char *iface,
                    const char *member, GVariant *params, gpointer data) {
  (void)conn, (void)sender, (void)path, (void)iface, (void)member, (void)params;
  ((watch *)data)->events++;
}

static void bus_closed(GDBusConnection *conn, gboolean remote, GError *err, gpointer data) {
  (void)conn, (void)remote, (void)err;
  ((watch *)data)->status = 3;
}

static int write_all(int fd, const char *text) {
  size_t left = strlen(text);
  while (left > 0) {
    ssize_t n = write(fd, text, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    text += n;
    left -= (size_t)n;
  }
  return 0;
}

// A question: every event the bus routed to us before our Ping is counted once its reply is in and the queued
// signal callbacks have run.
static void answer(watch *w) {
  GVariant *pong = call_sync(w->r->conn, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Peer",
                             "Ping", NULL, NULL, w->r->timeout_ms, NULL);
  if (!pong) {
    w->status = 3;
    return;
  }
  g_variant_unref(pong);
  while (g_main_context_iteration(w->r->ctx, FALSE)) {
  }
  char text[32];
  g_snprintf(text, sizeof text, "%" G_GUINT64_FORMAT "\n", w->events);
  if (write_all(w->out_fd, text) != 0) w->status = 0;
}

static gboolean readable(gint fd, GIOCondition condition, gpointer data) {
  (void)condition;
  watch *w = data;
  char buffer[256];
  ssize_t n = read(fd, buffer, sizeof buffer);
  if (n < 0 && errno == EINTR) return G_SOURCE_CONTINUE;
  if (n <= 0) {
    w->status = 0;
    return G_SOURCE_REMOVE;
  }
  for (ssize_t i = 0; i < n && w->status < 0; i++)
    if (buffer[i] == '\n') answer(w);
  return G_SOURCE_CONTINUE;
}

int xa_watch(xa_reader *r, int in_fd, int out_fd, char **error) {
  static const char *events[] = {"object:children-changed", "object:state-changed", "object:property-change",
                                 "object:text-changed", "object:visible-data-changed", "object:bounds-changed",
                                 "window:create", "window:destroy", "window:activate", "window:deactivate"};
  for (size_t i = 0; i < G_N_ELEMENTS(events); i++) {
    GVariant *ok = call_sync(r->conn, "org.a11y.atspi.Registry", "/org/a11y/atspi/registry", "org.a11y.atspi.Registry",
                             "RegisterEvent", g_variant_new("(sass)", events[i], NULL, ""), NULL, r->timeout_ms, error);
    if (!ok) return 4;
    g_variant_unref(ok);
  }
  watch w = {.r = r, .out_fd = out_fd, .status = -1};
  static const char *interfaces[] = {"org.a11y.atspi.Event.Object", "org.a11y.atspi.Event.Window"};
  // Applications that come or go are not counted here (every reader's own connection comes and goes too): their X
  // windows do, which the caller compares.
  guint ids[2];
  for (size_t i = 0; i < G_N_ELEMENTS(interfaces); i++)
    ids[i] = g_dbus_connection_signal_subscribe(r->conn, NULL, interfaces[i], NULL, NULL, NULL,
                                                G_DBUS_SIGNAL_FLAGS_NONE, counted, &w, NULL);
  g_dbus_connection_set_exit_on_close(r->conn, FALSE);
  gulong closed = g_signal_connect(r->conn, "closed", G_CALLBACK(bus_closed), &w);
  GSource *input = g_unix_fd_source_new(in_fd, G_IO_IN | G_IO_HUP | G_IO_ERR);
  g_source_set_callback(input, G_SOURCE_FUNC(readable), &w, NULL);
  g_source_attach(input, r->ctx);
  while (w.status < 0) g_main_context_iteration(r->ctx, TRUE);
  g_source_destroy(input);
  g_source_unref(input);
  g_signal_handler_disconnect(r->conn, closed);
  for (size_t i = 0; i < G_N_ELEMENTS(ids); i++) g_dbus_connection_signal_unsubscribe(r->conn, ids[i]);
  if (w.status == 3) set_error(error, "the accessibility bus went away");
  return w.status;
}
