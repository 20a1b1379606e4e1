"""Documents: list, upload (multipart; large ones as a job), delete, text, original, PDF pages."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, File, Form, HTTPException, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response

from citeline.access import Caller, PermissionDeniedError
from citeline.errors import CitelineError, DocumentNotFoundError
from citeline.filters import PUBLIC, Filter
from citeline.server.auth import current_caller, state_of
from citeline.server.pdf_pages import page_count, render_png, span_boxes
from citeline.server.state import ServerState
from citeline.server.uploads import UploadError, check_content, check_name, upload_collection
from citeline.types import Document

router = APIRouter(prefix="/v1", tags=["documents"])
CallerDep = Annotated[Caller, Depends(current_caller)]
_MEDIA = {
    "pdf": "application/pdf",
    "markdown": "text/markdown; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "text": "text/plain; charset=utf-8",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}


def document_json(doc: Document) -> dict[str, Any]:
    return {
        "id": doc.id,
        "collection": doc.collection,
        "source": doc.source,
        "title": doc.title,
        "format": doc.format,
        "size": doc.size,
        "page_count": doc.page_count,
        "tags": dict(doc.tags),
        "acl": list(doc.acl),
        "added_at": doc.added_at,
        "updated_at": doc.updated_at,
        "uploaded_by": doc.metadata.get("uploaded_by"),
    }


def readable(state: ServerState, caller: Caller, document_id: str) -> Document:
    """The document if this caller may read it; 404 otherwise (existence is not disclosed)."""
    doc = state.kb.readable_document(document_id, caller.principal)
    if doc is None:
        raise DocumentNotFoundError(document_id)
    return doc


def may_delete(caller: Caller, doc: Document) -> bool:
    """Writers delete their own uploads or what one of their groups owns; admins what they can read."""
    if caller.can("admin"):
        return True
    if not caller.can("writer") or caller.user is None:
        return False
    return doc.collection == upload_collection(caller.user) or any(
        f"group:{g}" in doc.acl for g in caller.principal.groups
    )


@router.get("/documents", summary="Documents this key may read (paged)")
async def list_documents(
    request: Request,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> dict[str, Any]:
    state = state_of(request)
    flt = Filter(principal=caller.principal)
    docs = await state.run(state.kb.documents, flt=flt, limit=limit, offset=offset)
    total = await state.run(state.kb.count_documents, flt)
    return {
        "documents": [{**document_json(d), "deletable": may_delete(caller, d)} for d in docs],
        "total": total,
        "limit": limit,
        "offset": offset,
    }


@router.post("/documents", status_code=201, summary="Upload a document (multipart)")
async def upload(
    request: Request,
    caller: CallerDep,
    file: Annotated[UploadFile, File(description="the document: .md, .html, .txt, .pdf, .docx")],
    share: Annotated[
        Literal["private", "groups", "public"],
        Form(description="private: the uploader only; groups: also the uploader's groups; public: everyone"),
    ] = "private",
) -> Any:
    """Indexed as `uploads/<user>/<file name>`: two users' `report.pdf` never replace each other, and the
    same user uploading the same name again updates the document. A file above
    `server_async_upload_kb` is indexed in the background: 202 with a job to poll at `/v1/jobs/{id}`."""
    state = state_of(request)
    caller.require("writer", "Uploading")
    name = check_name(file.filename or "")
    limit = int(state.settings.server_max_upload_mb * 1024 * 1024)
    data = await file.read(limit + 1)
    if len(data) > limit:
        raise HTTPException(
            413,
            f"The upload is larger than {state.settings.server_max_upload_mb:g} MB (server_max_upload_mb).",
        )
    check_content(name, data)
    user = caller.user or "anonymous"
    acl = [f"user:{user}"]
    if share == "groups":
        acl += [f"group:{g}" for g in caller.principal.groups]
    elif share == "public":
        acl.append(PUBLIC)
    collection = upload_collection(user)

    def work() -> dict[str, Any]:
        report = state.write(
            state.writer.add_bytes, name, data, collection=collection, acl=acl, metadata={"uploaded_by": user}
        )
        if report.failed:
            raise UploadError(f"{name}: {report.failed[0][1]}", 422)
        doc = state.writer.find_document(name, collection)
        return {"document": None if doc is None else document_json(doc), "report": report.to_json()}

    if len(data) > state.settings.server_async_upload_kb * 1024:
        job = state.jobs.submit(caller.principal.label, name, work)
        return JSONResponse({"job": job.to_json(), "poll": f"/v1/jobs/{job.id}"}, status_code=202)
    return await state.run(work)


@router.get("/jobs/{job_id}", summary="A background upload's state")
async def job_status(job_id: str, request: Request, caller: CallerDep) -> dict[str, Any]:
    job = state_of(request).jobs.get(job_id, caller.principal.label)
    if job is None:
        raise HTTPException(404, f"No job '{job_id}' of this key.")
    return job.to_json()


@router.get("/documents/{document_id}", summary="One document's metadata")
async def get_document(document_id: str, request: Request, caller: CallerDep) -> dict[str, Any]:
    state = state_of(request)
    doc = await state.run(readable, state, caller, document_id)
    starts = await state.run(state.kb.page_starts, doc)
    return {**document_json(doc), "deletable": may_delete(caller, doc), "page_starts": starts}


@router.delete("/documents/{document_id}", status_code=204, summary="Delete a document")
async def delete_document(document_id: str, request: Request, caller: CallerDep) -> Response:
    state = state_of(request)
    caller.require("writer", "Deleting documents")
    doc = await state.run(readable, state, caller, document_id)
    if not may_delete(caller, doc):
        raise PermissionDeniedError(
            "Writers may delete their own uploads or documents one of their groups owns; this is neither."
        )
    await state.run(state.write, state.writer.remove_document, doc)
    return Response(status_code=204)


@router.get("/documents/{document_id}/text", summary="The stored text, or a span of it")
async def document_text(
    document_id: str,
    request: Request,
    caller: CallerDep,
    start: Annotated[int | None, Query(ge=0)] = None,
    end: Annotated[int | None, Query(ge=0)] = None,
) -> dict[str, Any]:
    """`start`/`end` are code-point offsets (as in citations); past the end they stop at it (as
    slicing does), and the response says where the span it returns starts and ends."""
    state = state_of(request)
    doc = await state.run(readable, state, caller, document_id)
    text = await state.run(state.kb.text, doc)
    lo = 0 if start is None else start
    hi = len(text) if end is None else end
    if lo > hi:
        raise CitelineError(f"Span {lo}:{hi} is reversed: start must not be after end.")
    lo, hi = min(lo, len(text)), min(hi, len(text))
    starts = await state.run(state.kb.page_starts, doc)
    return {
        "document_id": doc.id,
        "start": lo,
        "end": hi,
        "length": len(text),
        "text": text[lo:hi],
        "page_starts": starts,
    }


@router.get("/documents/{document_id}/file", summary="The original file, as added")
async def document_file(document_id: str, request: Request, caller: CallerDep) -> Response:
    state = state_of(request)
    doc = await state.run(readable, state, caller, document_id)
    data = await state.run(state.kb.original, doc)
    if data is None:
        raise HTTPException(404, "The original of this document was not kept.")
    return Response(
        data,
        media_type=_MEDIA.get(doc.format, "application/octet-stream"),
        headers={
            # Never rendered on this origin: an uploaded HTML file must not run as the web page.
            "Content-Disposition": attachment(doc.source.rsplit("/", 1)[-1]),
            "Content-Security-Policy": "sandbox",
        },
    )


def attachment(filename: str) -> str:
    """Content-Disposition for ``filename``: an ASCII ``filename`` for old clients and the exact
    name as RFC 5987 ``filename*`` (UTF-8, percent-encoded), which browsers prefer."""
    plain = "".join(ch if " " <= ch < "\x7f" and ch not in '"\\' else "_" for ch in filename)
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(filename, safe='')}"


async def _pdf(state: ServerState, caller: Caller, document_id: str) -> tuple[Document, bytes]:
    doc = await state.run(readable, state, caller, document_id)
    if doc.format != "pdf":
        raise CitelineError(f"{doc.source} is not a PDF; pages exist for PDFs only (use /text).")
    data = await state.run(state.kb.original, doc)
    if data is None:
        raise HTTPException(404, "The original of this PDF was not kept.")
    return doc, data


@router.get("/documents/{document_id}/pages/{page}.png", summary="A PDF page rendered as PNG")
async def page_png(
    document_id: str,
    page: int,
    request: Request,
    caller: CallerDep,
    scale: Annotated[float, Query(gt=0, le=3)] = 1.5,
) -> Response:
    state = state_of(request)
    _doc, data = await _pdf(state, caller, document_id)
    png = await state.run(render_png, data, page, scale)
    return Response(png, media_type="image/png")  # no-store, as all /v1 data (headers.py)


@router.get(
    "/documents/{document_id}/pages/{page}/boxes", summary="Boxes of a span's characters on a PDF page"
)
async def page_boxes(
    document_id: str,
    page: int,
    request: Request,
    caller: CallerDep,
    start: Annotated[int, Query(ge=0)],
    end: Annotated[int, Query(ge=0)],
) -> dict[str, Any]:
    """Boxes are fractions of the page (x, y from the top-left corner, w, h), one per run of the
    span's characters on a line; `positions` is false when the document was indexed by a parser
    whose text differs from today's (re-add it to get boxes)."""
    state = state_of(request)
    doc, data = await _pdf(state, caller, document_id)
    pages = await state.run(page_count, data)
    if not 1 <= page <= pages:
        raise CitelineError(f"The document has {pages} pages; page {page} does not exist.")
    text = await state.run(state.kb.text, doc)
    if not start <= end <= len(text):
        raise CitelineError(f"Span {start}:{end} is outside the document's text (0:{len(text)}).")
    positions = await state.run(state.positions.get, doc.content_hash, data, text)
    boxes = [] if positions is None else await state.run(span_boxes, data, positions, page, start, end)
    starts = await state.run(state.kb.page_starts, doc)
    page_start = starts[page - 1] if page - 1 < len(starts) else 0
    page_end = starts[page] if page < len(starts) else len(text)
    return {
        "document_id": doc.id,
        "page": page,
        "pages": pages,
        "start": start,
        "end": end,
        "positions": positions is not None,
        "boxes": [b.to_json() for b in boxes],
        "page_start": page_start,
        "page_end": page_end,
    }
