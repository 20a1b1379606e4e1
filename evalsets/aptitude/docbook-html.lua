-- pandoc Lua filter for the DocBook XSL chunked HTML of the aptitude manual (used by fetch.sh).
-- Drops what is page furniture in the HTML and noise in a Word document: the navigation bars
-- of each chunk, the generated tables of contents, the screenshots and the links to their long
-- descriptions (figure captions stay). Admonitions, laid out by DocBook as a two-column table
-- (icon, text), become plain paragraphs under a bold "Note"/"Tip"/... line, as Word manuals
-- write them. Links keep their text only: they point at other HTML chunks.

local DROPPED = { "navheader", "navfooter", "toc", "list-of-figures", "list-of-tables",
                  "list-of-examples", "screenshot", "mediaobject", "longdesc-link" }
local ADMONITIONS = { "note", "tip", "warning", "important", "caution" }

local function has_any(classes, names)
  for _, name in ipairs(names) do
    if classes:includes(name) then
      return true
    end
  end
  return false
end

local function table_blocks(tbl)
  local out = pandoc.List()
  local function add_rows(rows)
    for _, row in ipairs(rows) do
      for _, cell in ipairs(row.cells) do
        out:extend(cell.contents)
      end
    end
  end
  add_rows(tbl.head.rows)
  for _, body in ipairs(tbl.bodies) do
    add_rows(body.head)
    add_rows(body.body)
  end
  add_rows(tbl.foot.rows)
  return out
end

function Div(el)
  if has_any(el.classes, DROPPED) then
    return {}
  end
  if has_any(el.classes, ADMONITIONS) then
    local blocks = pandoc.List()
    for _, block in ipairs(el.content) do
      if block.t == "Table" then
        for _, inner in ipairs(table_blocks(block)) do
          if pandoc.utils.stringify(inner) ~= "" then
            blocks:insert(inner)
          end
        end
      else
        blocks:insert(block)
      end
    end
    -- the first block is the admonition's title cell ("Note"): keep it as a bold line
    if #blocks > 0 and (blocks[1].t == "Plain" or blocks[1].t == "Para") then
      blocks[1] = pandoc.Para({ pandoc.Strong(blocks[1].content) })
    end
    return blocks
  end
  return nil
end

function Image(el)
  return {}
end

function Link(el)
  return el.content
end
