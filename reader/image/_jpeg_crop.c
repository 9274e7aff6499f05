/* Decode only a window of a JPEG, at a DCT scale, with the system's libjpeg-turbo.
 *
 * libjpeg-turbo (>= 1.5) can skip rows above a window (jpeg_skip_scanlines: they are still
 * entropy-decoded, not transformed or colour-converted), decode a column range only
 * (jpeg_crop_scanline: the IDCT runs on the blocks inside it) and stop below it. Combined with
 * scale_num/scale_denom the window comes out at 1/2, 1/4 or 1/8 of full size.
 *
 * Exact pixels: fancy upsampling interpolates a chroma column from its neighbours, and a cropped
 * decode treats the window's edges as the image's. The window is therefore widened by one
 * column on each side (where the image has one) and those columns are returned with it; the
 * caller cuts them off. The same holds for rows: the decode starts one row above the window.
 * A window is also at least MIN_COLUMNS wide (see run()).
 *
 * The GIL is released for the whole decode.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>

#ifndef LIBJPEG_TURBO_VERSION_NUMBER
#error "needs libjpeg-turbo's jpeglib.h (jpeg_crop_scanline, jpeg_skip_scanlines)"
#endif

#define MAX_SHIFT 3
#define MIN_COLUMNS 32
#define ROWS_PER_READ 16 /* rows asked of libjpeg per call: a whole row group */

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf escape;
    char message[JMSG_LENGTH_MAX];
} ErrorManager;

static void raise_error(j_common_ptr cinfo) {
    ErrorManager *err = (ErrorManager *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, err->message);
    longjmp(err->escape, 1);
}

/* Warnings (corrupt data that libjpeg would paper over) are errors, as in simplejpeg's strict
 * mode; trace messages are ignored. */
static void on_message(j_common_ptr cinfo, int level) {
    if (level < 0) raise_error(cinfo);
}

typedef struct {
    /* in */
    const unsigned char *data;
    size_t size;
    int shift, fastdct, fastupsample;
    long top, left, height, width; /* window, in pixels of the scaled image */
    unsigned char *out;
    size_t capacity;
    /* out */
    long x0, columns, y0, rows, image_height, image_width;
    int failed;
    char message[JMSG_LENGTH_MAX];
} Job;

static long clamp(long value, long low, long high) {
    return value < low ? low : (value > high ? high : value);
}

/* Runs without the GIL. Fills job->out with rows x columns x 3 bytes (RGB) covering the window
 * widened by one pixel each way (clamped), and says where that block starts. */
static void run(Job *job) {
    struct jpeg_decompress_struct cinfo;
    ErrorManager err;
    /* volatile: read after a longjmp */
    volatile int created = 0;

    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = raise_error;
    err.pub.emit_message = on_message;
    if (setjmp(err.escape)) {
        job->failed = 1;
        memcpy(job->message, err.message, sizeof(job->message));
        if (created) jpeg_destroy_decompress(&cinfo);
        return;
    }
    jpeg_create_decompress(&cinfo);
    created = 1;
    jpeg_mem_src(&cinfo, job->data, (unsigned long)job->size);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.out_color_space = JCS_RGB;
    cinfo.scale_num = 1;
    cinfo.scale_denom = 1u << job->shift;
    cinfo.dct_method = job->fastdct ? JDCT_IFAST : JDCT_ISLOW;
    cinfo.do_fancy_upsampling = job->fastupsample ? FALSE : TRUE;
    jpeg_start_decompress(&cinfo);

    long image_h = (long)cinfo.output_height, image_w = (long)cinfo.output_width;
    job->image_height = image_h;
    job->image_width = image_w;
    long top = clamp(job->top, 0, image_h - 1), left = clamp(job->left, 0, image_w - 1);
    long bottom = clamp(job->top + job->height, top + 1, image_h);
    long right = clamp(job->left + job->width, left + 1, image_w);
    /* one pixel of context each way, where the image has it */
    long y0 = top > 0 ? top - 1 : 0, y1 = bottom < image_h ? bottom + 1 : bottom;
    long x0 = left > 0 ? left - 1 : 0, x1 = right < image_w ? right + 1 : right;
    /* libjpeg-turbo replaces fancy upsampling by plain replication for a component at most
     * 2 samples wide, which a narrow crop would be: keep the window wide enough. */
    if (x1 - x0 < MIN_COLUMNS) {
        x1 = x0 + MIN_COLUMNS < image_w ? x0 + MIN_COLUMNS : image_w;
        x0 = x1 - MIN_COLUMNS > 0 ? x1 - MIN_COLUMNS : 0;
    }

    JDIMENSION xoffset = (JDIMENSION)x0, columns = (JDIMENSION)(x1 - x0);
    if (columns < (JDIMENSION)image_w) jpeg_crop_scanline(&cinfo, &xoffset, &columns);
    size_t stride = (size_t)columns * 3;
    if ((size_t)(y1 - y0) * stride > job->capacity) {
        snprintf(err.message, sizeof(err.message),
                 "the output buffer holds %zu bytes, the window needs %zu", job->capacity,
                 (size_t)(y1 - y0) * stride);
        longjmp(err.escape, 1);
    }
    if (y0 > 0) {
        JDIMENSION skipped = jpeg_skip_scanlines(&cinfo, (JDIMENSION)y0);
        if (skipped != (JDIMENSION)y0) {
            snprintf(err.message, sizeof(err.message), "skipped %u of %ld rows", skipped, y0);
            longjmp(err.escape, 1);
        }
    }
    JSAMPROW rows[ROWS_PER_READ];
    for (long row = 0; row < y1 - y0;) {
        long batch = y1 - y0 - row < ROWS_PER_READ ? y1 - y0 - row : ROWS_PER_READ;
        for (long i = 0; i < batch; i++) rows[i] = job->out + (size_t)(row + i) * stride;
        JDIMENSION got = jpeg_read_scanlines(&cinfo, rows, (JDIMENSION)batch);
        if (got == 0) {
            snprintf(err.message, sizeof(err.message), "the data ended at row %ld", y0 + row);
            longjmp(err.escape, 1);
        }
        row += (long)got;
    }
    job->x0 = (long)xoffset;
    job->columns = (long)columns;
    job->y0 = y0;
    job->rows = y1 - y0;
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
}

PyDoc_STRVAR(decode_window_doc,
"decode_window(data, shift, top, left, height, width, out, fastdct=False, fastupsample=False)\n"
"\n"
"Decode the window [top, top + height) x [left, left + width) of the JPEG `data` at\n"
"1 / 2**shift of full size (window in pixels of that scale) as RGB into the writable buffer\n"
"`out`. The decoded block covers the window and may extend past it (one pixel of context\n"
"each way, and the left edge moved to a block boundary); it is stored row after row with no\n"
"padding. Returns (y0, x0, rows, columns, scaled_height, scaled_width): where the block\n"
"starts in the scaled image, its size, and the scaled image's size. Raises ValueError with\n"
"libjpeg's message when the data is not a JPEG it decodes.");

static PyObject *decode_window(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"data",  "shift", "top",     "left",         "height",
                               "width", "out",   "fastdct", "fastupsample", NULL};
    Py_buffer data, out;
    Job job;
    memset(&job, 0, sizeof(job));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*illllw*|pp", keywords, &data, &job.shift,
                                     &job.top, &job.left, &job.height, &job.width, &out,
                                     &job.fastdct, &job.fastupsample))
        return NULL;
    PyObject *result = NULL;
    if (job.shift < 0 || job.shift > MAX_SHIFT) {
        PyErr_Format(PyExc_ValueError, "shift must be 0 to %d, got %d", MAX_SHIFT, job.shift);
    } else if (job.height < 1 || job.width < 1) {
        PyErr_Format(PyExc_ValueError, "the window must be at least 1x1, got %ldx%ld",
                     job.height, job.width);
    } else {
        job.data = data.buf;
        job.size = (size_t)data.len;
        job.out = out.buf;
        job.capacity = (size_t)out.len;
        Py_BEGIN_ALLOW_THREADS run(&job);
        Py_END_ALLOW_THREADS
        if (job.failed)
            PyErr_SetString(PyExc_ValueError, job.message);
        else
            result = Py_BuildValue("llllll", job.y0, job.x0, job.rows, job.columns,
                                   job.image_height, job.image_width);
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"decode_window", (PyCFunction)(void (*)(void))decode_window, METH_VARARGS | METH_KEYWORDS,
     decode_window_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jpeg_crop",
    "Window decodes of JPEGs at a DCT scale with the system's libjpeg-turbo.", -1, methods,
};

PyMODINIT_FUNC PyInit__jpeg_crop(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "LIBJPEG_TURBO_VERSION", LIBJPEG_TURBO_VERSION_NUMBER) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
