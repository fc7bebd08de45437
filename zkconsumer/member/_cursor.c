/* The per-record fast path of a stream (`zkconsumer.member.streams.KafkaStream.__next__`) in C.
 *
 * Handing out one message from the chunk in hand is a few checks and two stores; as Python
 * code, the call alone cost more than the rest of consuming a message. `Cursor` keeps the
 * stream's fields in C (`_chunk`, `_index`, `_claims`, `_gate`, `_until`, `_stopping`, read
 * and written by the Python code as ordinary attributes) and does exactly what
 * `streams._PythonCursor.__next__` does: if the chunk in hand has a message left, its claim is
 * still the partition's, the clock is before the delivery gate's `until` (read as a C double:
 * the lease's deadline while the gate is open; see `before`) and the stream is not stopping,
 * the message is handed out and its offset recorded as the partition's consumed position (the
 * message before it is consumed) in the claim's `Consumed` cell, the chunk's fourth item (read
 * by the committer through the claim: no map beside the record); anything else goes to the
 * stream's `_next_slowly()`. It runs
 * with the GIL held throughout, so another thread reading the fields sees them before or after
 * a message, never in between.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <time.h>

#ifndef CLOCK_MONOTONIC_COARSE /* Linux's: elsewhere the monotonic clock itself */
#define CLOCK_MONOTONIC_COARSE CLOCK_MONOTONIC
#endif

typedef struct {
    PyObject_HEAD
    PyObject *chunk;     /* (partition, claim, messages, the claim's Consumed cell) */
    Py_ssize_t index;    /* the next message of the chunk to hand out */
    PyObject *claims;    /* partition -> claim, shared with the member */
    PyObject *gate;      /* the member's DeliveryGate (for the Python code) */
    PyObject *until;     /* the gate's `until`: a Deadline */
    char stopping;
    PyObject *weakrefs;
} Cursor;

static PyObject *next_slowly_name;

/* A gate's `until`: the float every hand-out compares the clock with (see
 * `zkconsumer.member.claims.DeliveryGate`), read here without an attribute lookup. */
typedef struct {
    PyObject_HEAD
    double value;
} Deadline;

static PyTypeObject *deadline_type;

/* A claim's consumed position (see `zkconsumer.member.claims.Claim`): one offset, or NULL
 * (None) before the first message is handed out, written here per message without a lookup. */
typedef struct {
    PyObject_HEAD
    PyObject *value;
} Consumed;

static PyTypeObject *consumed_type;

/* How far the coarse clock may lag the monotonic clock for its reading alone to decide: it is
 * the monotonic clock as of the last tick, a few nanoseconds to read from the vDSO where the
 * monotonic clock costs several times that; its lag is a tick (its resolution), seen up to
 * tens of milliseconds on a loaded virtual machine. Nearer the deadline than this (or past it)
 * the monotonic clock itself decides, so the check is exact whenever the lag stays below. */
#define COARSE_SLACK_S 0.25

static double seconds(clockid_t clock) {
    struct timespec now;
    if (clock_gettime(clock, &now) != 0) return HUGE_VAL;
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* Whether the monotonic clock is before `deadline` (monotonic seconds, as Python's). */
static int before(double deadline) {
    if (seconds(CLOCK_MONOTONIC_COARSE) + COARSE_SLACK_S < deadline) return 1;
    return seconds(CLOCK_MONOTONIC) < deadline;
}

/* The chunk's next message as a new reference, if it may be handed out now; NULL without an
 * error if it may not, NULL with one on failure. The caller holds `chunk`: looking the
 * partition up in the claims may run code (its key's comparison) that replaces the stream's
 * fields, so they are checked again after it and nothing borrowed from them is used. */
static PyObject *next_in_chunk(Cursor *self, PyObject *chunk) {
    PyObject *partition = PyTuple_GET_ITEM(chunk, 0);
    PyObject *claim = PyTuple_GET_ITEM(chunk, 1);
    PyObject *messages = PyTuple_GET_ITEM(chunk, 2);
    PyObject *consumed = PyTuple_GET_ITEM(chunk, 3);
    if (Py_TYPE(consumed) != consumed_type || !PyList_CheckExact(messages) || self->index < 0
            || self->index >= PyList_GET_SIZE(messages))
        return NULL;
    PyObject *held = PyDict_GetItemWithError(self->claims, partition);
    if (held != claim) return NULL; /* NULL: an error, or the partition is not held */
    PyObject *until = self->until;
    if (!until || Py_TYPE(until) != deadline_type || !before(((Deadline *)until)->value))
        return NULL;
    Py_ssize_t index = self->index;
    if (self->chunk != chunk || index < 0 || index >= PyList_GET_SIZE(messages))
        return NULL;
    PyObject *message = PyList_GET_ITEM(messages, index);
    if (!PyTuple_Check(message) || PyTuple_GET_SIZE(message) <= 2) return NULL;
    Py_INCREF(message);
    PyObject *offset = PyTuple_GET_ITEM(message, 2);
    Py_INCREF(offset);
    Py_XSETREF(((Consumed *)consumed)->value, offset);
    self->index = index + 1;
    return message;
}

static PyObject *cursor_next(Cursor *self) {
    PyObject *chunk = self->chunk;
    if (!self->stopping && chunk && PyTuple_CheckExact(chunk) && PyTuple_GET_SIZE(chunk) == 4
            && self->claims && PyDict_CheckExact(self->claims)) {
        Py_INCREF(chunk);
        PyObject *message = next_in_chunk(self, chunk);
        Py_DECREF(chunk);
        if (message || PyErr_Occurred()) return message;
    }
    return PyObject_CallMethodNoArgs((PyObject *)self, next_slowly_name);
}

static PyObject *cursor_iter(PyObject *self) {
    Py_INCREF(self);
    return self;
}

static int cursor_traverse(Cursor *self, visitproc visit, void *arg) {
    Py_VISIT(self->chunk);
    Py_VISIT(self->claims);
    Py_VISIT(self->gate);
    Py_VISIT(self->until);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int cursor_clear(Cursor *self) {
    Py_CLEAR(self->chunk);
    Py_CLEAR(self->claims);
    Py_CLEAR(self->gate);
    Py_CLEAR(self->until);
    return 0;
}

static void cursor_dealloc(Cursor *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    cursor_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMemberDef cursor_members[] = {
    {"_chunk", T_OBJECT_EX, offsetof(Cursor, chunk), 0,
     "(partition, claim, messages, the claim's Consumed cell)"},
    {"_index", T_PYSSIZET, offsetof(Cursor, index), 0, "next message of the chunk"},
    {"_claims", T_OBJECT_EX, offsetof(Cursor, claims), 0, "partition -> claim"},
    {"_gate", T_OBJECT_EX, offsetof(Cursor, gate), 0, "the member's delivery gate"},
    {"_until", T_OBJECT_EX, offsetof(Cursor, until), 0, "the gate's `until` (a Deadline)"},
    {"_stopping", T_BOOL, offsetof(Cursor, stopping), 0, "the stream is closing"},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(Cursor, weakrefs), READONLY},
    {NULL},
};

static PyType_Slot cursor_slots[] = {
    {Py_tp_doc, "A stream's chunk in hand and the per-message fast path over it."},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, cursor_dealloc},
    {Py_tp_traverse, cursor_traverse},
    {Py_tp_clear, cursor_clear},
    {Py_tp_iter, cursor_iter},
    {Py_tp_iternext, cursor_next},
    {Py_tp_members, cursor_members},
    {0, NULL},
};

static PyType_Spec cursor_spec = {
    .name = "zkconsumer.member._cursor.Cursor",
    .basicsize = sizeof(Cursor),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = cursor_slots,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_cursor",
    "A stream's per-message fast path (see zkconsumer.member.streams).", -1, NULL,
};

static PyMemberDef deadline_members[] = {
    {"value", T_DOUBLE, offsetof(Deadline, value), 0, "monotonic seconds"},
    {NULL},
};

static PyType_Slot deadline_slots[] = {
    {Py_tp_doc, "A float the per-message fast path reads without an attribute lookup."},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_members, deadline_members},
    {0, NULL},
};

static PyType_Spec deadline_spec = {
    .name = "zkconsumer.member._cursor.Deadline",
    .basicsize = sizeof(Deadline),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = deadline_slots,
};

static void consumed_dealloc(Consumed *self) {
    PyTypeObject *type = Py_TYPE(self);
    Py_CLEAR(self->value);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMemberDef consumed_members[] = {
    {"value", T_OBJECT, offsetof(Consumed, value), 0, "the consumed position, or None"},
    {NULL},
};

static PyType_Slot consumed_slots[] = {
    {Py_tp_doc, "A claim's consumed position, which the per-message path writes in place."},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, consumed_dealloc},
    {Py_tp_members, consumed_members},
    {0, NULL},
};

static PyType_Spec consumed_spec = {
    .name = "zkconsumer.member._cursor.Consumed",
    .basicsize = sizeof(Consumed),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = consumed_slots,
};

/* The type made from `spec`, added to the module as `name`, as a new reference kept by the
 * caller besides the module's; NULL with an error on failure. */
static PyTypeObject *add_type(PyObject *module, PyType_Spec *spec, const char *name) {
    PyObject *type = PyType_FromSpec(spec);
    if (!type) return NULL;
    Py_INCREF(type);  /* one for the module, one for the caller */
    if (PyModule_AddObject(module, name, type) < 0) {
        Py_DECREF(type);
        Py_DECREF(type);
        return NULL;
    }
    return (PyTypeObject *)type;
}

PyMODINIT_FUNC PyInit__cursor(void) {
    next_slowly_name = PyUnicode_InternFromString("_next_slowly");
    if (!next_slowly_name) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (!module) return NULL;
    PyTypeObject *cursor = add_type(module, &cursor_spec, "Cursor");
    if (!cursor || !(deadline_type = add_type(module, &deadline_spec, "Deadline"))
            || !(consumed_type = add_type(module, &consumed_spec, "Consumed"))) {
        Py_DECREF(module);
        return NULL;
    }
    Py_DECREF(cursor);  /* the module's reference is enough: the code never names it */
    return module;
}
