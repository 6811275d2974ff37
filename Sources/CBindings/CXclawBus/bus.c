// The session-bus client of the desktop services over GDBus. Every wait is bounded: the connection by a cancellable
// fired at its deadline, calls by GDBus's own timeout, queued messages by the queue's timed pop.
#include "xclaw_bus.h"

#include <gio/gio.h>
#include <string.h>

/// What the filter (GDBus's worker thread) needs; freed by GDBus once no filter can run any more.
typedef struct {
  GAsyncQueue *queue;
  int monitor;
  char *unique_name;
} filter_data;

struct xclaw_bus {
  GDBusConnection *conn;
  // The context the connection was made in: GDBus queues its "closed" notice there, which must be run at close or
  // the notice keeps the connection (and an eventfd) alive for ever.
  GMainContext *ctx;
  GAsyncQueue *queue;
  guint filter_id;
  char *unique_name;
};

static char *dup_error(const char *prefix, GError *err) {
  if (err == NULL) return g_strdup(prefix);
  return g_strdup_printf("%s%s", prefix, err->message);
}

// ---- GVariant → JSON ----

static void json_string(GString *out, const char *s) {
  g_string_append_c(out, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
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

static void json_value(GString *out, GVariant *v);

// A dictionary's key as JSON object keys must be: strings as they are, anything else as its JSON text.
static void json_key(GString *out, GVariant *key) {
  if (g_variant_is_of_type(key, G_VARIANT_TYPE_STRING) || g_variant_is_of_type(key, G_VARIANT_TYPE_OBJECT_PATH) ||
      g_variant_is_of_type(key, G_VARIANT_TYPE_SIGNATURE)) {
    json_string(out, g_variant_get_string(key, NULL));
    return;
  }
  GString *text = g_string_new(NULL);
  json_value(text, key);
  json_string(out, text->str);
  g_string_free(text, TRUE);
}

static void json_value(GString *out, GVariant *v) {
  switch (g_variant_classify(v)) {
  case G_VARIANT_CLASS_BOOLEAN: g_string_append(out, g_variant_get_boolean(v) ? "true" : "false"); break;
  case G_VARIANT_CLASS_BYTE: g_string_append_printf(out, "%u", (unsigned)g_variant_get_byte(v)); break;
  case G_VARIANT_CLASS_INT16: g_string_append_printf(out, "%d", (int)g_variant_get_int16(v)); break;
  case G_VARIANT_CLASS_UINT16: g_string_append_printf(out, "%u", (unsigned)g_variant_get_uint16(v)); break;
  case G_VARIANT_CLASS_INT32: g_string_append_printf(out, "%d", (int)g_variant_get_int32(v)); break;
  case G_VARIANT_CLASS_UINT32: g_string_append_printf(out, "%u", (unsigned)g_variant_get_uint32(v)); break;
  case G_VARIANT_CLASS_INT64: g_string_append_printf(out, "%" G_GINT64_FORMAT, g_variant_get_int64(v)); break;
  case G_VARIANT_CLASS_UINT64: g_string_append_printf(out, "%" G_GUINT64_FORMAT, g_variant_get_uint64(v)); break;
  case G_VARIANT_CLASS_HANDLE: g_string_append_printf(out, "%d", (int)g_variant_get_handle(v)); break;
  case G_VARIANT_CLASS_DOUBLE: {
    double d = g_variant_get_double(v);
    if (d != d || d > G_MAXDOUBLE || d < -G_MAXDOUBLE) {
      g_string_append(out, "null");  // JSON has no NaN or infinity
    } else {
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      g_string_append(out, g_ascii_dtostr(buf, sizeof buf, d));
    }
    break;
  }
  case G_VARIANT_CLASS_STRING:
  case G_VARIANT_CLASS_OBJECT_PATH:
  case G_VARIANT_CLASS_SIGNATURE: json_string(out, g_variant_get_string(v, NULL)); break;
  case G_VARIANT_CLASS_VARIANT: {
    GVariant *inner = g_variant_get_variant(v);
    json_value(out, inner);
    g_variant_unref(inner);
    break;
  }
  case G_VARIANT_CLASS_MAYBE: {
    if (g_variant_n_children(v) == 0) {
      g_string_append(out, "null");
    } else {
      GVariant *inner = g_variant_get_child_value(v, 0);
      json_value(out, inner);
      g_variant_unref(inner);
    }
    break;
  }
  case G_VARIANT_CLASS_ARRAY: {
    const GVariantType *element = g_variant_type_element(g_variant_get_type(v));
    gboolean dict = g_variant_type_is_dict_entry(element);
    gsize n = g_variant_n_children(v);
    g_string_append_c(out, dict ? '{' : '[');
    for (gsize i = 0; i < n; i++) {
      if (i) g_string_append_c(out, ',');
      GVariant *child = g_variant_get_child_value(v, i);
      if (dict) {
        GVariant *key = g_variant_get_child_value(child, 0), *value = g_variant_get_child_value(child, 1);
        json_key(out, key);
        g_string_append_c(out, ':');
        json_value(out, value);
        g_variant_unref(key);
        g_variant_unref(value);
      } else {
        json_value(out, child);
      }
      g_variant_unref(child);
    }
    g_string_append_c(out, dict ? '}' : ']');
    break;
  }
  case G_VARIANT_CLASS_TUPLE:
  case G_VARIANT_CLASS_DICT_ENTRY: {
    gsize n = g_variant_n_children(v);
    g_string_append_c(out, '[');
    for (gsize i = 0; i < n; i++) {
      if (i) g_string_append_c(out, ',');
      GVariant *child = g_variant_get_child_value(v, i);
      json_value(out, child);
      g_variant_unref(child);
    }
    g_string_append_c(out, ']');
    break;
  }
  }
}

static void json_field(GString *out, const char *name, const char *value) {
  g_string_append_printf(out, ",\"%s\":", name);
  if (value) json_string(out, value);
  else g_string_append(out, "null");
}

static char *message_json(GDBusMessage *m) {
  static const char *types[] = {"invalid", "method_call", "method_return", "error", "signal"};
  GDBusMessageType type = g_dbus_message_get_message_type(m);
  GString *out = g_string_new("{\"type\":");
  json_string(out, (unsigned)type < 5 ? types[type] : "invalid");
  json_field(out, "sender", g_dbus_message_get_sender(m));
  json_field(out, "destination", g_dbus_message_get_destination(m));
  json_field(out, "path", g_dbus_message_get_path(m));
  json_field(out, "interface", g_dbus_message_get_interface(m));
  json_field(out, "member", g_dbus_message_get_member(m));
  json_field(out, "error_name", g_dbus_message_get_error_name(m));
  g_string_append_printf(out, ",\"serial\":%u,\"reply_serial\":%u,\"body\":", g_dbus_message_get_serial(m),
                         g_dbus_message_get_reply_serial(m));
  GVariant *body = g_dbus_message_get_body(m);
  if (body) json_value(out, body);
  else g_string_append(out, "[]");
  g_string_append_c(out, '}');
  return g_string_free(out, FALSE);
}

// ---- the connection ----

// Runs in GDBus's worker thread. A plain connection queues the signals it subscribed to; a monitor queues everything
// it sees and consumes it, except what is addressed to itself (GDBus must see its replies), so GDBus never answers a monitored
// method call (a monitor that sends is disconnected by the bus).
static GDBusMessage *on_message(GDBusConnection *conn, GDBusMessage *m, gboolean incoming, gpointer user_data) {
  (void)conn;
  filter_data *f = user_data;
  if (!incoming) return m;
  GDBusMessageType type = g_dbus_message_get_message_type(m);
  const char *destination = g_dbus_message_get_destination(m);
  if (f->monitor) {
    // Addressed to the monitor itself: the reply to BecomeMonitor, the bus's NameLost for the name it gave up.
    gboolean ours = destination && f->unique_name && strcmp(destination, f->unique_name) == 0;
    if (ours) return m;
    g_async_queue_push(f->queue, message_json(m));
    g_object_unref(m);
    return NULL;
  }
  if (type == G_DBUS_MESSAGE_TYPE_SIGNAL) {
    const char *member = g_dbus_message_get_member(m), *sender = g_dbus_message_get_sender(m);
    gboolean bus_own = sender && strcmp(sender, "org.freedesktop.DBus") == 0 && member &&
                       (strcmp(member, "NameAcquired") == 0 || strcmp(member, "NameLost") == 0);
    if (!bus_own) g_async_queue_push(f->queue, message_json(m));
  }
  return m;
}

static void free_filter(gpointer data) {
  filter_data *f = data;
  g_async_queue_unref(f->queue);
  g_free(f->unique_name);
  g_free(f);
}

typedef struct {
  GDBusConnection *conn;
  GError *err;
  int done;
} open_state;

static void on_open(GObject *source, GAsyncResult *result, gpointer user_data) {
  (void)source;
  open_state *s = user_data;
  s->conn = g_dbus_connection_new_for_address_finish(result, &s->err);
  s->done = 1;
}

static gboolean on_deadline(gpointer user_data) {
  g_cancellable_cancel(user_data);
  return G_SOURCE_REMOVE;
}

xclaw_bus *xclaw_bus_open(const char *address, int timeout_ms, const char *const *monitor_rules, char **error) {
  gint64 deadline_us = g_get_monotonic_time() + (gint64)(timeout_ms > 0 ? timeout_ms : 1) * 1000;
  GMainContext *ctx = g_main_context_new();
  g_main_context_push_thread_default(ctx);
  GCancellable *cancel = g_cancellable_new();
  GSource *deadline = g_timeout_source_new(timeout_ms > 0 ? (guint)timeout_ms : 1);
  g_source_set_callback(deadline, on_deadline, cancel, NULL);
  g_source_attach(deadline, ctx);
  open_state s = {0};
  // Authentication only: GDBus would send Hello itself with its own 25 s timeout and no cancellable, so Hello is
  // sent below, within what is left of the deadline.
  g_dbus_connection_new_for_address(address, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT, NULL, cancel, on_open,
                                    &s);
  while (!s.done) g_main_context_iteration(ctx, TRUE);
  g_source_destroy(deadline);
  g_source_unref(deadline);
  g_object_unref(cancel);
  g_main_context_pop_thread_default(ctx);
  if (s.conn == NULL) {
    gboolean late = s.err && g_error_matches(s.err, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    *error = late ? g_strdup_printf("the bus did not answer within %d ms", timeout_ms) : dup_error("", s.err);
    g_clear_error(&s.err);
    while (g_main_context_iteration(ctx, FALSE)) {
    }
    g_main_context_unref(ctx);
    return NULL;
  }
  g_dbus_connection_set_exit_on_close(s.conn, FALSE);

  xclaw_bus *bus = g_new0(xclaw_bus, 1);
  bus->conn = s.conn;
  bus->ctx = ctx;
  bus->queue = g_async_queue_new_full(g_free);

  gint64 left_ms = (deadline_us - g_get_monotonic_time()) / 1000;
  GError *err = NULL;
  GVariant *hello = g_dbus_connection_call_sync(
      s.conn, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", NULL,
      G_VARIANT_TYPE("(s)"), G_DBUS_CALL_FLAGS_NONE, left_ms > 0 ? (int)left_ms : 1, NULL, &err);
  if (hello == NULL) {
    gboolean late = g_error_matches(err, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
    g_dbus_error_strip_remote_error(err);
    *error = late ? g_strdup_printf("the bus did not answer within %d ms", timeout_ms)
                  : dup_error("the bus refused xclaw's Hello: ", err);
    g_clear_error(&err);
    xclaw_bus_close(bus);
    return NULL;
  }
  g_variant_get(hello, "(s)", &bus->unique_name);
  g_variant_unref(hello);

  filter_data *f = g_new0(filter_data, 1);
  f->queue = g_async_queue_ref(bus->queue);
  f->monitor = monitor_rules != NULL;
  f->unique_name = g_strdup(bus->unique_name);
  bus->filter_id = g_dbus_connection_add_filter(s.conn, on_message, f, free_filter);

  if (monitor_rules) {
    GVariantBuilder rules;
    g_variant_builder_init(&rules, G_VARIANT_TYPE("as"));
    for (const char *const *r = monitor_rules; *r; r++) g_variant_builder_add(&rules, "s", *r);
    left_ms = (deadline_us - g_get_monotonic_time()) / 1000;
    GVariant *reply = g_dbus_connection_call_sync(
        s.conn, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Monitoring", "BecomeMonitor",
        g_variant_new("(asu)", &rules, 0u), NULL, G_DBUS_CALL_FLAGS_NONE, left_ms > 0 ? (int)left_ms : 1, NULL,
        &err);
    if (reply == NULL) {
      gboolean late = g_error_matches(err, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
      g_dbus_error_strip_remote_error(err);
      *error = late ? g_strdup_printf("the bus did not answer within %d ms", timeout_ms)
                    : dup_error("the bus refused to let xclaw monitor it: ", err);
      g_clear_error(&err);
      xclaw_bus_close(bus);
      return NULL;
    }
    g_variant_unref(reply);
  }
  return bus;
}

void xclaw_bus_close(xclaw_bus *bus) {
  if (bus == NULL) return;
  if (bus->filter_id) g_dbus_connection_remove_filter(bus->conn, bus->filter_id);
  g_dbus_connection_close_sync(bus->conn, NULL, NULL);
  g_object_unref(bus->conn);
  // Runs the notices GDBus left in the connection's context (its "closed" signal), which hold the last references.
  while (g_main_context_iteration(bus->ctx, FALSE)) {
  }
  g_main_context_unref(bus->ctx);
  g_async_queue_unref(bus->queue);
  g_free(bus->unique_name);
  g_free(bus);
}

const char *xclaw_bus_unique_name(xclaw_bus *bus) { return bus->unique_name; }

// The D-Bus name of a failure: the remote error's own, or the bus's standard name for what went wrong locally.
static char *error_name_of(GError *err) {
  char *remote = g_dbus_error_get_remote_error(err);
  if (remote) return remote;
  if (g_error_matches(err, G_IO_ERROR, G_IO_ERROR_TIMED_OUT)) return g_strdup("org.freedesktop.DBus.Error.NoReply");
  if (g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CLOSED)) return g_strdup("org.freedesktop.DBus.Error.Disconnected");
  if (err->domain == G_DBUS_ERROR) {
    char *name = g_dbus_error_encode_gerror(err);
    if (name) return name;
  }
  return g_strdup("org.freedesktop.DBus.Error.Failed");
}

int xclaw_bus_call(xclaw_bus *bus, const char *destination, const char *path, const char *interface,
                   const char *method, const char *args, int timeout_ms, char **reply, char **error_name,
                   char **error) {
  GVariant *params = NULL;
  if (args && *args) {
    GError *perr = NULL;
    params = g_variant_parse(NULL, args, NULL, NULL, &perr);
    if (params == NULL || !g_variant_is_of_type(params, G_VARIANT_TYPE_TUPLE)) {
      *error_name = g_strdup("xclaw.BadArguments");
      *error = params ? g_strdup("the arguments are not a tuple") : dup_error("", perr);
      g_clear_error(&perr);
      if (params) g_variant_unref(params);
      return -1;
    }
  }
  GError *err = NULL;
  GVariant *result = g_dbus_connection_call_sync(bus->conn, destination, path, interface, method, params, NULL,
                                                 G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL, &err);
  if (params) g_variant_unref(params);
  if (result == NULL) {
    *error_name = error_name_of(err);
    g_dbus_error_strip_remote_error(err);
    *error = g_strdup(err->message);
    g_clear_error(&err);
    return -1;
  }
  GString *out = g_string_new(NULL);
  json_value(out, result);
  g_variant_unref(result);
  *reply = g_string_free(out, FALSE);
  return 0;
}

int xclaw_bus_subscribe(xclaw_bus *bus, const char *match_rule, int timeout_ms, char **error) {
  GError *err = NULL;
  GVariant *reply = g_dbus_connection_call_sync(bus->conn, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                "org.freedesktop.DBus", "AddMatch", g_variant_new("(s)", match_rule),
                                                NULL, G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL, &err);
  if (reply == NULL) {
    g_dbus_error_strip_remote_error(err);
    *error = dup_error("", err);
    g_clear_error(&err);
    return -1;
  }
  g_variant_unref(reply);
  return 0;
}

char *xclaw_bus_next(xclaw_bus *bus, int timeout_ms, int *closed) {
  *closed = 0;
  gint64 deadline = g_get_monotonic_time() + (gint64)(timeout_ms > 0 ? timeout_ms : 0) * 1000;
  for (;;) {
    // In slices, so a connection the bus closed is noticed while waiting.
    gint64 left = deadline - g_get_monotonic_time();
    char *item = g_async_queue_timeout_pop(bus->queue, left < 0 ? 0 : (left > 100000 ? 100000 : left));
    if (item) return item;
    if (g_dbus_connection_is_closed(bus->conn)) {
      *closed = 1;
      return NULL;
    }
    if (g_get_monotonic_time() >= deadline) return NULL;
  }
}

void xclaw_bus_free(char *s) { g_free(s); }
