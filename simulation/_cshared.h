/*
 * Helpers shared by the engine's C extensions: typed views of numpy buffers and the
 * engine's GraphError. Included, not linked: each extension is one translation unit.
 */
#ifndef TIERLAB_CSHARED_H
#define TIERLAB_CSHARED_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
    Py_buffer view;
    int held;
} Buf;

static inline int get_buf(PyObject *obj, Buf *b, char fmt, int writable, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) < 0)
        return -1;
    b->held = 1;
    Py_ssize_t want = fmt == 'd' ? (Py_ssize_t)sizeof(double) : (Py_ssize_t)sizeof(int);
    const char *f = b->view.format ? b->view.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if (b->view.itemsize != want || f[0] != fmt || f[1] != '\0') {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous %s array", name,
                     fmt == 'd' ? "float64" : "int32");
        return -1;
    }
    return 0;
}

static inline void graph_error(const char *msg) {
    PyObject *mod = PyImport_ImportModule("simulation.scheduler");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, "GraphError") : NULL;
    Py_XDECREF(mod);
    if (!cls) {
        PyErr_Clear();
        cls = PyExc_ValueError;
        Py_INCREF(cls);
    }
    PyErr_SetString(cls, msg);
    Py_DECREF(cls);
}

#endif
