package kvmark.ycsb;

import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.Vector;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * A YCSB binding that writes every operation to a file through one buffered writer, as
 * the Tectonic paper adapted YCSB for its generator comparison (YCSB's BasicDB flushes
 * a print per operation instead). One line per operation, Tectonic's letters: I and U
 * with the record's field values concatenated, P for a read, S for a scan with its
 * length, D for a delete. The path is the property filedb.path.
 */
public class FileDB extends DB {
  private static BufferedWriter out;
  private static String path;
  private static int open;

  @Override
  public void init() throws DBException {
    synchronized (FileDB.class) {
      if (open++ == 0) {
        path = getProperties().getProperty("filedb.path");
        if (path == null) {
          throw new DBException("FileDB needs -p filedb.path=FILE");
        }
        try {
          out = new BufferedWriter(new FileWriter(path, true), 1 << 16);
        } catch (IOException e) {
          throw new DBException(e);
        }
      }
    }
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (FileDB.class) {
      if (--open == 0) {
        try {
          out.close();
        } catch (IOException e) {
          throw new DBException(e);
        }
      }
    }
  }

  /** Writes one operation; a failed write ends the run (exit 1) with its reason. */
  private static Status line(String text) {
    synchronized (FileDB.class) {
      try {
        out.write(text);
        out.newLine();
        return Status.OK;
      } catch (IOException e) {
        System.err.println("FileDB: writing " + path + " failed: " + e);
        System.exit(1);
        return Status.ERROR;
      }
    }
  }

  private static String values(Map<String, ByteIterator> values) {
    StringBuilder b = new StringBuilder();
    for (ByteIterator v : values.values()) {
      b.append(v.toString());
    }
    return b.toString();
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    return line("P " + key);
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    return line("S " + startkey + " " + recordcount);
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    return line("U " + key + " " + values(values));
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    return line("I " + key + " " + values(values));
  }

  @Override
  public Status delete(String table, String key) {
    return line("D " + key);
  }
}
